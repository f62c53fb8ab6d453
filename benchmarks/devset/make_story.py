"""Writes "The Coast Survey", a long deterministic narrative with concrete, checkable facts spread through it.

    python -m benchmarks.devset.make_story OUT_FILE [--seed 7]

Thirteen chapters follow a surveyor, Elena Varga, mapping a coast. Each chapter has hand-written paragraphs that
carry its facts (names, numbers, places; the questions in questions.jsonl ask about them) and descriptive
paragraphs composed from a fixed pool of sentences with a seeded generator, so the text is long (~20K tokens
with SmolLM2's tokenizer), reads as prose, and is byte-for-byte the same on every run. The descriptive
sentences carry no numbers and no facts that a question asks about.
"""

from __future__ import annotations

import random
import textwrap
from pathlib import Path

from .generated import generator_main, write_text_file

TITLE = "The Coast Survey"

# Each chapter: title, the place and companion the descriptive sentences may mention, the fact paragraphs,
# and how many descriptive paragraphs go before, between and after them.
CHAPTERS: list[dict] = [
    dict(
        title="The Grey Heron",
        place="Port Caldwell",
        companion="Captain Pell",
        facts=[
            "Elena Varga was thirty-one years old when the Coastal Survey Office sent her to map the northern "
            "shore. She left Port Caldwell on the third of March aboard the steamer Grey Heron, a narrow, "
            "coal-hungry vessel commanded by Captain Josiah Pell, who had sailed that coast for most of his life "
            "and who did not think much of maps.",
            "Her orders, signed by Director Amos Whitcombe, were to survey the coast between Cape Mirren and the "
            "Saltmere islands and to return a finished chart before the winter. In her cabin she kept the one "
            "instrument she trusted above all others: a brass theodolite made by Hollis & Sons of Port Caldwell, "
            "which had belonged to her father and had been repaired so often that hardly a screw of the original "
            "remained.",
            '"You will find the weather worse than the people," Captain Pell told her on the first evening, as '
            'the lights of the harbour dropped behind them, "and the people worse than the roads." Elena wrote '
            "the remark in the back of her notebook, under a sketch of the funnel, and decided to judge for "
            "herself.",
        ],
        filler=(0, 2, 3),
    ),
    dict(
        title="Kessring",
        place="Kessring",
        companion="Ansel Brook",
        facts=[
            "The Grey Heron put her ashore at Kessring, a fishing village of slate roofs and tarred sheds built "
            "around a harbour that dried out at low water. The harbour master, Ansel Brook, met her on the quay "
            "with a lantern, a borrowed umbrella and a small brown dog named Pepper, which followed Elena "
            "everywhere for the rest of the week.",
            "Above the village, on the headland called Gull Head, stood the lighthouse that was to be her first "
            "station. Ansel walked her up to it on the second morning and made her count the stairs out loud. "
            "There were one hundred and twelve steps from the door to the lantern room, and Elena, who had "
            "climbed church towers in three countries, admitted at the top that she was out of breath.",
        ],
        filler=(2, 3, 2),
    ),
    dict(
        title="The Keeper",
        place="Gull Head",
        companion="Ida Marlowe",
        facts=[
            "The keeper of the Gull Head light was Ida Marlowe, a broad, quiet woman who had kept the light for "
            "twenty-seven years, first beside her husband and then, after his death, alone. She showed Elena the "
            "great lamp, which burned colza oil, and the clockwork that turned the lens so that ships saw one "
            "white flash every nine seconds.",
            '"Every night for twenty-seven years," Ida said, polishing a brass rail that was already bright, '
            '"and not one night dark." She let Elena set up the theodolite on the gallery, where the view ran '
            "along the whole bay, and brought her tea in a tin mug with a chipped blue rim.",
        ],
        filler=(3, 2, 2),
    ),
    dict(
        title="The Storm",
        place="Gull Head",
        companion="Ida Marlowe",
        facts=[
            "On the night of the twenty-second of April the wind went round to the north-east and rose to a gale. "
            "A little after midnight a schooner called the Margarethe, bound for Port Caldwell with a cargo of "
            "timber, struck Fenwick Shoal, the long sandbank that lies a mile off the point.",
            "The Kessring lifeboat, the Constance, went out three times before dawn. By morning all fourteen of "
            "the Margarethe's crew had been brought ashore alive, soaked and silent, and laid out in blankets on "
            "the floor of the net loft. Elena spent the rest of the day carrying soup and writing down the names "
            "of the men for the harbour master's report.",
        ],
        filler=(2, 3, 2),
    ),
    dict(
        title="Inland to Orlen",
        place="Orlen",
        companion="Wim Jansen",
        facts=[
            "To tie her coastal stations to the old inland triangulation, Elena had to travel to the market town "
            "of Orlen, two days away by mule-cart over the moor. She took a room at an inn called The Copper "
            "Kettle, which stood beside the bridge and smelled of bread and wet wool.",
            "The innkeeper, Wim Jansen, charged her three shillings a night, breakfast included, and refused to "
            "take more even when she stayed an extra week. He had once driven a coach for the survey's founders "
            "and still spoke of them as if they might walk in at any moment and order supper.",
        ],
        filler=(3, 2, 3),
    ),
    dict(
        title="The Baseline",
        place="the moor above Orlen",
        companion="Wim Jansen",
        facts=[
            "Every survey stands on one line measured on the ground, and Elena's stood on the moor above Orlen, "
            "between two old stone cairns that the shepherds called Long Cairn and Hob's Cairn. With two hired "
            "men and a steel chain she measured the distance between them four times over nine days.",
            "The four measurements never differed by more than a hand's breadth, and she entered the mean in her "
            "ledger in red ink: the baseline was 4,318 yards long. Every angle she had taken from Gull Head, and "
            "every angle she would take afterwards, hung from that single number.",
        ],
        filler=(2, 3, 2),
    ),
    dict(
        title="A Letter from Vell",
        place="Orlen",
        companion="Wim Jansen",
        facts=[
            "A letter was waiting for her at The Copper Kettle when she came down from the moor. It was from her "
            "younger brother Tomas, who had gone to the city of Vell the year before to find work, and it was "
            "longer and happier than any letter he had ever written.",
            "Tomas had been taken on as an apprentice by a clockmaker, Master Ruel, whose shop stood in the lane "
            "behind the cathedral. In his first month he had helped Master Ruel to repair the great clock in the "
            "tower of Saint Aubin, and he had drawn its escapement for her in the margin, very carefully, with "
            "every tooth of the wheel.",
        ],
        filler=(2, 2, 3),
    ),
    dict(
        title="Mount Aster",
        place="Mount Aster",
        companion="Dr. Fenn",
        facts=[
            "The highest station of the survey was the summit of Mount Aster, and Elena did not climb it alone. "
            "At the foot of the mountain she met Dr. Nadia Fenn, a botanist from the university at Vell, who was "
            "collecting mountain gentians and who knew every path on the slopes.",
            "They reached the summit cairn at noon on a clear day in June. Dr. Fenn's barometer and Elena's angles "
            "agreed that the mountain was 1,206 metres high, a little lower than the old charts claimed, and from "
            "the top Elena could see the whole coast from Cape Mirren to the grey line of the Saltmere islands.",
        ],
        filler=(3, 2, 2),
    ),
    dict(
        title="The Oil Store",
        place="Gull Head",
        companion="Ida Marlowe",
        facts=[
            "Back at Gull Head, Elena asked Ida for the old logbook of the light, which would give her the "
            "bearings of wrecks and buoys going back forty years. Ida said it had been missing since her "
            "husband's time, and for three days the two women searched the tower from the lantern to the cellar.",
            "They found it at last in a tin box under the floorboards of the oil store, wrapped in oilcloth and "
            "quite dry. On its first page, in a careful hand, was the record of the brig Bright Anna, lost on "
            "Fenwick Shoal with all hands, long before anyone in Kessring had thought of building a lifeboat.",
        ],
        filler=(2, 3, 2),
    ),
    dict(
        title="Saltmere",
        place="Saltmere",
        companion="Osric Dunne",
        facts=[
            "In August Elena crossed to Saltmere, the largest of the islands at the end of her coast. The ferry "
            "was an open boat with a brown sail, run by a ferryman named Osric Dunne, and the crossing took two "
            "hours in a light wind.",
            "The island had three hundred and forty inhabitants, one church, one school and no trees at all. The "
            "schoolmistress lent Elena her own room and slept at her sister's, and the children followed the "
            "theodolite from station to station as if it were a travelling show.",
        ],
        filler=(3, 2, 2),
    ),
    dict(
        title="Fever",
        place="Kessring",
        companion="Clara",
        facts=[
            "On her return from Saltmere Elena fell ill with a fever that kept her in bed for eleven days. Ida "
            "Marlowe could not leave the light, so she sent her niece Clara down to the village to nurse her.",
            "Clara was seventeen, read everything in the room including the survey's tables of logarithms, and "
            "by the time Elena could sit up she had learned to book angles as neatly as any clerk in the Coastal "
            "Survey Office.",
        ],
        filler=(2, 2, 3),
    ),
    dict(
        title="The Map",
        place="Port Caldwell",
        companion="Director Whitcombe",
        facts=[
            "The fair copy took six weeks of drawing at a table by the window of the net loft. Elena delivered "
            "the finished map to Director Whitcombe in Port Caldwell on the nineteenth of October, rolled in a "
            "tin tube that Ansel Brook had soldered for her.",
            "It was drawn at a scale of one inch to the mile and showed every rock, beacon and landing between "
            "Cape Mirren and Saltmere. The Director looked at it for a long time without speaking and then paid "
            "her sixty guineas, ten more than the contract named, and asked her when she could start on the "
            "southern shore.",
        ],
        filler=(2, 3, 2),
    ),
    dict(
        title="The Marlowe School",
        place="Kessring",
        companion="Clara",
        facts=[
            "Elena did not start on the southern shore. The following spring she came back to Kessring and opened "
            "a school of surveying in the old net loft, and she named it the Marlowe School, after the keeper who "
            "had not let the light go dark for twenty-seven years.",
            "The school opened with nine pupils. Clara was the first of them, and Pepper, who was by then too old "
            "to follow anyone up the hill, slept every afternoon under the drawing table.",
        ],
        filler=(2, 2, 1),
    ),
]

# Descriptive sentences. Slots: {place}, {companion}, and the word pools below. No numbers, no new names.
SENTENCES: list[str] = [
    "The sky over {place} was the colour of {colour}, and the wind came {wind}.",
    "Elena woke before dawn, as she always did, and lay for a while listening to {sound}.",
    "She spent the morning checking her notes against the sketches of the day before, correcting a line here "
    "and a bearing there.",
    "By midday the light had turned {light}, and the far headlands stood out as sharply as if they had been cut "
    "from paper.",
    "{companion} talked for a long time about {topic}, and Elena listened more than she spoke.",
    "Supper was {food}, eaten at the end of a long table while the lamps were lit one by one.",
    "The path ran {path}, and her boots were soon heavy with {ground}.",
    "Gulls wheeled above the water, crying at nothing, and far out a {boat} was tacking slowly against the wind.",
    "She set up the theodolite, levelled it with great care, and waited for the haze to lift from {landmark}.",
    "Some days the work went well and the angles closed neatly; other days nothing agreed with anything, and she "
    "started again.",
    "In the evening she copied the day's readings into the ledger by the light of a candle, her fingers stiff "
    "with cold.",
    "The sea below was {sea}, and the sound of it came up through the rocks like breathing.",
    "{companion} had a way of falling silent in the middle of a sentence and finishing it an hour later, as if "
    "nothing had happened in between.",
    "A line of {birds} crossed the bay in the late afternoon, low over the water, heading for the cliffs.",
    "She thought of her father's workroom, of the smell of oil and brass, and of the patience he had tried to "
    "teach her.",
    "The rain came in from the sea in long grey curtains, and for a while there was nothing to do but wait.",
    "When it cleared, the whole coast seemed to have been washed and set out again, fresher than before.",
    "The people of {place} watched her work with a polite suspicion that slowly turned into curiosity.",
    "Children asked what the instrument was for, and she let them look through the telescope at {landmark}.",
    "An old man mending nets told her that the coast had been surveyed before, in his grandfather's time, and "
    "that the map had been wrong.",
    "She walked back along the shore in the dusk, with the tide going out and the wet sand shining like {shine}.",
    "There were days when the fog never lifted at all, and she spent them drawing by the window.",
    "The wind dropped in the night, and in the morning the bay lay as flat and pale as {shine}.",
    "She liked the early hours best, before anyone else was about, when the world seemed to belong to the "
    "survey alone.",
    "Her hands were rough now, and her face brown from the wind, and she no longer minded either.",
    "At night the beam of the lighthouse swept across the ceiling of her room, regular as a heartbeat.",
    "{companion} brought her {gift} one morning, without a word, and left it on the windowsill.",
    "The road was little more than two ruts in the heather, and the cart lurched from one to the other.",
    "Sheep watched her from the hillside with the flat indifference of creatures who had seen surveyors before.",
    "She made a careful drawing of {landmark} and labelled every rock she could see from the station.",
    "Clouds piled up over the hills in the afternoon, white at the top and dark underneath, but the rain held off.",
    "It was the kind of evening when sound carries a long way, and she could hear {sound} from far off.",
    "She slept badly, dreaming of angles that would not close and of chains that stretched as she measured them.",
    "In the morning everything that had seemed impossible the night before turned out to be merely difficult.",
    "The tide had left pools among the rocks, each one holding a small bright piece of the sky.",
    "She wrote to the Survey Office when she could, short letters full of figures and short of news.",
    "Nobody in {place} hurried, and after a while she found that she had stopped hurrying too.",
    "The grass on the cliff tops was short and springy, cropped close by rabbits and the salt wind.",
    "From the station she could follow the line of the coast for miles, every bay folded into the next.",
    "{companion} laughed at her for writing everything down, and then asked to see the notebook.",
    "There was a smell of {smell} in the air, and somewhere a dog was barking at the wind.",
    "Light rain fell all afternoon, too fine to see but enough to bead on the brass of the theodolite.",
    "She cleaned the lenses every evening with a soft cloth, as her father had done, whether they needed it or not.",
    "The days were growing {season}, and she began to count the stations that remained.",
    "Now and then she stopped simply to look, forgetting the instrument, forgetting the ledger.",
    "The path down to the beach was steep and loose, and she went down it sideways like a crab.",
    "A cart passed on the road below, its driver asleep and the horse finding its own way home.",
    "The wind had a voice of its own on the headland, and it never said the same thing twice.",
    "She wondered, not for the first time, what the coast would look like when the map was finished, and "
    "whether anyone would notice.",
    "On fine evenings the sunset turned the whole bay to {colour}, and nobody in {place} stopped to look at it.",
    "The stones of the old walls were covered with grey and yellow lichen, soft as felt under her hand.",
    "She kept a list of the names people used for every rock and inlet, because the old names were part of the "
    "map too.",
    "It was quiet in the evenings, so quiet that she could hear the candle flame moving.",
    "The boats came in late, low in the water, and the whole village went down to meet them.",
    "Some of the fishermen would not speak to her at first, but they all wanted to know where the rocks were.",
    "Her boots needed mending again, and she put off the errand for as long as she could.",
    "{companion} said that the weather would change by the evening, and it did.",
    "She walked the line of the shore twice, once out and once back, to be sure of every turn in it.",
    "The work had a rhythm now: climb, level, sight, read, write, and climb again.",
    "There was always more to measure than there was daylight to measure it in.",
]

POOLS: dict[str, list[str]] = {
    "colour": ["pewter", "old milk", "wet slate", "a pigeon's wing", "faded copper", "pale straw", "dull silver"],
    "wind": [
        "in hard gusts off the water",
        "steadily from the west",
        "cold and thin from the hills",
        "in long, tired sighs",
        "from nowhere in particular",
    ],
    "sound": [
        "the surf on the shingle",
        "the gulls on the roof",
        "a cart on the cobbles",
        "the church bell",
        "the wind in the chimney",
        "voices on the quay",
    ],
    "light": ["hard and clear", "thin and silvery", "warm and golden", "flat and white", "soft and uncertain"],
    "topic": [
        "the price of fish",
        "the old wrecks along the coast",
        "the winters of his youth",
        "the habits of the tides",
        "relatives who had gone abroad",
        "the proper way to mend a sail",
    ],
    "food": ["fish stew", "bread and hard cheese", "mutton and potatoes", "oatcakes and smoked herring", "pea soup"],
    "path": [
        "along the cliff edge",
        "down through a gully of ferns",
        "across a field of stones",
        "beside a brown stream",
        "over the shoulder of the hill",
    ],
    "ground": ["red mud", "wet sand", "black peat", "clay the colour of rust"],
    "boat": ["fishing smack", "small coaster", "pilot cutter", "rowing boat with a patched sail"],
    "landmark": [
        "the far headland",
        "the church spire",
        "the mouth of the bay",
        "the ridge of the moor",
        "the line of the islands",
        "the signal mast on the point",
    ],
    "sea": ["grey and restless", "green and glassy", "white with broken water", "calm as a pond", "dark and heavy"],
    "birds": ["cormorants", "oystercatchers", "curlews", "geese", "terns"],
    "shine": ["a mirror", "hammered tin", "a sheet of glass", "polished pewter"],
    "gift": ["a jar of honey", "a knitted scarf", "a loaf still warm from the oven", "a bunch of heather"],
    "smell": ["wood smoke", "seaweed", "tar and rope", "wet heather", "baking bread"],
}

SENTENCES_PER_PARAGRAPH = (6, 9)  # descriptive sentences per paragraph


def _descriptive_paragraph(rng: random.Random, chapter: dict, unused: list[int]) -> str:
    chapter_index = CHAPTERS.index(chapter)
    count = rng.randint(*SENTENCES_PER_PARAGRAPH)
    if len(unused) < count:  # the chapter has used every sentence: start over
        unused[:] = range(len(SENTENCES))
    picks = [unused.pop(rng.randrange(len(unused))) for _ in range(count)]
    sentences = []
    for index in picks:
        template = SENTENCES[index]
        fills = {key: rng.choice(values) for key, values in POOLS.items()}
        fills["place"] = chapter["place"]
        fills["companion"] = chapter["companion"]
        fills["season"] = "longer" if chapter_index < 8 else "shorter"
        sentence = template.format(**fills)
        sentences.append(sentence[0].upper() + sentence[1:])
    return " ".join(sentences)


def story_text(seed: int = 7) -> str:
    """The whole story as one string: a title, then chapters of paragraphs separated by blank lines."""
    rng = random.Random(seed)
    parts = [TITLE, "A story in thirteen chapters."]
    for number, chapter in enumerate(CHAPTERS, start=1):
        parts.append(f"Chapter {number}. {chapter['title']}")
        unused = list(range(len(SENTENCES)))  # no descriptive sentence twice in a chapter
        before, between, after = chapter["filler"]
        facts = chapter["facts"]
        paragraphs = [_descriptive_paragraph(rng, chapter, unused) for _ in range(before)]
        for i, fact in enumerate(facts):
            paragraphs.append(fact)
            if i < len(facts) - 1:
                gap = between if i == 0 else 1
                paragraphs.extend(_descriptive_paragraph(rng, chapter, unused) for _ in range(gap))
        paragraphs.extend(_descriptive_paragraph(rng, chapter, unused) for _ in range(after))
        parts.extend(paragraphs)
    parts.append("The End.")
    # Wrapped at 76 columns like a plain-text book, paragraphs separated by a blank line.
    return "\n\n".join(textwrap.fill(part, width=76) for part in parts) + "\n"


def write_story(path: Path, seed: int = 7) -> Path:
    return write_text_file(path, story_text(seed))


if __name__ == "__main__":
    generator_main(__doc__, write_story, "story.txt", seed=7)
