"""The web app: the workspace (the page's one facade over the service), the read queue, the kept-token view and
the Gradio page (web/page)."""
