"""Document readers, one per format, each turning a file into Blocks of located text."""
