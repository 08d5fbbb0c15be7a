"""General-chat prompts for self-distillation of the drafter: the everyday requests that prompts.py (topic explanations
and coding) lacks. Nine kinds: explain, howto, recipe, summary, advice, compare, list, story and math.

All material here (question subjects, tasks, dishes, situations, pairs, story premises, the summary passages and the
math problem templates) was written by hand for this module; nothing is downloaded or copied. Prompts are templates
filled with subjects, a fraction of them with a kind-specific suffix (audience, length, tone), plus seeded math word
problems. Each prompt records its `source`, naming the template and the tuple entry it came from, so it can be traced
back here. `chat_prompts(seed)` is deterministic: all randomness comes from one `random.Random(seed)`.
"""
from __future__ import annotations

import itertools
import random

SUFFIX_RATE = 0.35  # share of templated prompts that get a kind-specific suffix
STORY_COMBOS = 300  # character + goal + setting combinations drawn for stories
MATH_COUNT = 600

# --- explain: everyday how/why questions ({x} is a lowercase clause) ------------------------------------------------
EXPLAIN_QUESTIONS = (
    "why the sky is blue", "why bread goes stale", "how a refrigerator keeps food cold", "why onions make you cry",
    "how a microwave oven heats food", "why we get hiccups", "how noise-cancelling headphones work",
    "why ice floats on water", "how a credit score works", "why leaves change color in autumn", "how a mortgage works",
    "why cats purr", "how GPS finds your location", "why we yawn", "how soap removes grease", "why the sea is salty",
    "how airplanes stay in the air", "why popcorn pops", "how a thermostat works", "why we have leap years",
    "how a bicycle stays upright", "why metal feels colder than wood at the same temperature",
    "how a QR code stores information", "why dogs sniff everything", "how touchscreens detect your finger",
    "why the Moon has phases", "how yeast makes bread rise", "why our fingers wrinkle in the bath",
    "how an elevator works", "why time zones exist", "how a dishwasher cleans dishes", "why we dream",
    "how interest on a car loan is calculated", "why some people are left-handed", "how a smoke detector works",
    "why coffee keeps you awake", "how a compass works", "why we see lightning before we hear thunder",
    "how a zipper works", "why stars twinkle", "how a hybrid car saves fuel", "why muscles get sore after exercise",
    "how an index fund works", "why cut apples turn brown", "how a washing machine spins water out of clothes",
    "why salt melts ice on roads", "how Wi-Fi sends data through the air", "why we get goosebumps",
    "how a pressure cooker cooks food faster", "why planes leave white trails in the sky", "how a sundial tells time",
    "why the days are longer in summer", "how a barcode scanner reads a price", "why chili peppers taste hot",
    "how a lock and key work", "why your ears pop on an airplane", "how an insurance deductible works",
    "why babies sleep so much", "how a solar eclipse happens", "how tax refunds work", "why we need vitamins",
    "how a hearing aid works", "why iron rusts", "how magnets stick to a fridge", "why soap bubbles are round",
    "how caffeine affects the body", "why the ocean looks blue", "how a piano makes sound",
    "why some bridges sway in the wind", "how recycling plants sort plastic", "why ice cream gives you brain freeze",
    "how a heat pump warms a house", "why we have fingerprints", "how a fever helps fight infection",
    "why rubber bands stretch", "how traffic lights know when to change", "why geese fly in a V shape",
    "how a sourdough starter works", "why marathon runners hit the wall", "how a paper airplane glides",
    "why glass is transparent", "how a pension plan works", "why some people snore",
    "how an electric kettle knows when to switch off", "why bees make honey", "how a camera focuses",
    "why cooks salt pasta water", "why antibiotics don't work on colds", "why the Earth has seasons",
    "how the stock market works", "why we shiver when we're cold", "how sound travels through walls",
    "why a boomerang comes back", "how decaffeinated coffee is made", "why people get jet lag", "why soda goes flat",
    "why sunsets are red and orange", "how email spam filters work", "why people have different blood types",
    "how a sewing machine makes a stitch", "why very fresh eggs are hard to peel",
    "how an air conditioner cools a room", "why car batteries struggle in cold weather",
    "how libraries organize their books", "why chocolate melts in your hand", "how a vending machine recognizes coins",
    "why planets are round", "how ranked-choice voting works", "why tomatoes count as a fruit",
    "how glasses correct blurry vision", "why the wind blows", "why cats usually land on their feet",
    "how the post office sorts mail", "why some clouds are dark", "how a candle burns",
)
EXPLAIN_TEMPLATES = (
    "Can you explain {x}?", "Explain {x} in simple words.", "I've always wondered {x}. Can you explain it?",
    "Could you tell me {x}?", "Please explain {x} to a complete beginner.",
    "My kid asked me {x} and I didn't know the answer. What should I tell them?", "Quick question: {x}?",
    "What's the simple explanation for {x}?", "Help me understand {x}.",
    "I read something about {x} but got confused. Can you clarify?", "In a few sentences, explain {x}.",
    "Explain {x} using an everyday analogy.", "Can you walk me through {x}?",
    "I'm curious about {x}. What's the short answer?", "Give me a clear explanation of {x}.",
    "Is there an easy way to understand {x}?",
)

# --- howto: household, practical and personal tasks ({x} is a verb phrase) -----------------------------------------
HOWTO_TASKS = (
    "remove a red wine stain from a carpet", "unclog a bathroom sink without chemicals", "change a flat tire",
    "hang a picture frame straight", "fold a fitted sheet", "boil an egg so the yolk stays soft",
    "sharpen a kitchen knife", "clean a cast-iron pan", "set up a new Wi-Fi router", "back up the photos on my phone",
    "write a polite complaint email", "ask for a raise", "tie a tie", "jump-start a car",
    "get rid of fruit flies in the kitchen", "descale a kettle", "clean the filter of a dishwasher", "paint a room",
    "patch a small hole in drywall", "reset a tripped circuit breaker", "bleed a radiator", "fix a running toilet",
    "start a compost bin", "repot a houseplant", "grow basil on a windowsill", "iron a dress shirt", "sew on a button",
    "wash a wool sweater", "remove chewing gum from clothes", "pack a suitcase efficiently", "plan a road trip",
    "make a monthly budget", "read a nutrition label", "train a puppy to sit", "introduce a new cat to my dog",
    "trim my dog's nails", "clean a fish tank", "teach a child to ride a bike", "organize a small closet",
    "declutter my garage", "defrost a freezer", "keep cut flowers fresh longer",
    "make a good first impression at a new job", "prepare for a phone interview", "write a thank-you note",
    "give a toast at a wedding", "memorize a short speech", "take better photos with my phone", "learn to touch type",
    "speed up a slow laptop", "create a strong password I can remember", "spot a phishing email",
    "cancel a subscription I no longer use", "wrap a present neatly", "light a charcoal grill",
    "build a campfire safely", "pitch a tent", "read a topographic map", "parallel park", "check the oil in my car",
    "clean foggy headlights", "remove rust from a bike chain", "pump bike tires to the right pressure",
    "choose a ripe avocado", "store fresh herbs", "meal prep for a whole week", "make cold brew coffee",
    "brew loose-leaf tea properly", "soften hard brown sugar", "fix a squeaky door", "clean the grout between tiles",
    "get rid of a musty smell in a closet", "wash a baseball cap", "remove a splinter", "treat a minor burn",
    "fall asleep faster", "start running as a beginner", "stretch after a workout", "fix my posture at my desk",
    "reduce my screen time", "keep a journal", "learn a new language on my own", "practice the guitar effectively",
    "tune a guitar by ear", "study for an exam in one week", "take good lecture notes", "write a cover letter",
    "negotiate the price of a used car", "prepare my house for winter", "lower my electricity bill",
    "seal drafty windows", "clean a microwave quickly", "get tea stains out of a mug",
    "talk to a noisy neighbor politely", "host a dinner party on a budget", "plan a surprise birthday party",
    "pick a good watermelon", "clean white sneakers", "polish leather shoes", "remove a stripped screw",
    "hang shelves on a wall", "assemble flat-pack furniture without losing my mind", "measure a room for new carpet",
    "make a simple personal website", "set up two-factor authentication", "move my contacts to a new phone",
    "print a document from my phone", "track my spending in a spreadsheet", "fold a paper crane", "juggle three balls",
    "whistle with my fingers", "do a proper push-up", "get a water ring out of a wooden table",
    "keep my houseplants alive while I'm on vacation", "childproof a kitchen", "make a small apartment look bigger",
    "get my toddler to eat vegetables", "potty train a toddler", "calm down before a presentation",
    "apologize to a friend sincerely", "say no to extra work politely", "find volunteer work in my community",
)
HOWTO_TEMPLATES = (
    "How do I {x}?", "What's the best way to {x}?", "Give me step-by-step instructions to {x}.",
    "Can you tell me how to {x}?", "I need to {x}. Where do I start?", "What do I need to {x}, and what are the steps?",
    "Explain how to {x}.", "Never done this before: how do I {x}?", "Is there an easy way to {x}?",
    "What mistakes should I avoid when I try to {x}?", "Walk me through how to {x}.", "Any quick tips to {x}?",
    "I'm planning to {x} this weekend. How should I go about it?", "How long does it take to {x}, and how is it done?",
)

# --- recipe: dishes, and what-can-I-cook-with requests -------------------------------------------------------------
DISHES = (
    "banana bread", "chicken curry", "vegetable lasagna", "fluffy pancakes", "tomato soup", "guacamole", "fried rice",
    "beef stew", "mushroom risotto", "chocolate chip cookies", "Greek salad", "pad thai", "shakshuka", "hummus",
    "lentil soup", "apple pie", "French toast", "a cheese omelette", "spaghetti carbonara", "chili con carne",
    "beef tacos", "falafel", "a berry smoothie", "overnight oats", "roast chicken", "baked salmon", "minestrone",
    "potato salad", "coleslaw", "mac and cheese", "garlic bread", "pizza dough", "brownies", "lemon drizzle cake",
    "homemade granola", "a tofu stir-fry", "chicken noodle soup", "butternut squash soup", "Caesar salad",
    "meatballs in tomato sauce", "veggie burgers", "scones", "pumpkin pie", "fish tacos", "a simple tomato pasta sauce",
    "basil pesto", "ratatouille", "stuffed peppers", "shepherd's pie", "a spinach quiche", "waffles", "carrot cake",
    "rice pudding", "tzatziki", "fresh tomato salsa", "chickpea curry", "teriyaki chicken", "pork dumplings",
    "gazpacho", "bruschetta", "a vegetable frittata", "blueberry muffins", "quinoa salad", "a grilled cheese sandwich",
    "cornbread", "jambalaya", "seafood paella", "black bean soup", "apple crumble", "homemade lemonade",
    "hot chocolate", "iced tea", "cinnamon rolls", "flatbread", "baked potatoes", "roasted vegetables",
    "spinach and feta pie", "chicken fajitas", "tuna pasta bake", "creamy mashed potatoes", "eggless pancakes",
    "vegan chocolate cake", "coconut rice", "miso soup", "egg salad sandwiches", "peanut butter cookies",
    "caprese salad", "oatmeal raisin cookies", "no-churn ice cream", "sweet potato fries", "chicken soup for a cold",
)
DISH_TEMPLATES = (
    "Give me a recipe for {x}.", "How do I make {x}?", "What's a simple recipe for {x}?",
    "I want to cook {x} tonight. What do I need?", "Can you give me a beginner-friendly recipe for {x}?",
    "How do I make {x} from scratch?", "What ingredients go into {x}?", "Write a recipe for {x} that serves four.",
    "What's the secret to making {x} really well?", "My family loves {x}. Can you share an easy version?",
    "Can you suggest a healthier way to make {x}?", "I've never cooked before. How do I make {x}?",
    "What's a quick weeknight version of {x}?", "Recipe for {x}, please, with step-by-step instructions.",
)
PANTRY_INGREDIENTS = (
    "eggs, spinach and cheese", "rice, canned tuna and peas", "chickpeas, tomatoes and onions",
    "pasta, garlic and olive oil", "potatoes, leeks and cream", "leftover roast chicken and some tortillas",
    "bananas, oats and peanut butter", "ground beef, kidney beans and a can of tomatoes",
    "tofu, broccoli and soy sauce",
    "stale bread, eggs and milk", "lentils, carrots and celery", "zucchini, feta and mint",
    "cabbage, apples and sausages", "sweet potatoes, black beans and limes", "salmon, lemon and asparagus",
    "flour, butter and sugar", "cooked rice, eggs and frozen vegetables", "mushrooms, thyme and cream",
    "cauliflower, curry powder and coconut milk", "noodles, peanut butter and cucumber",
    "tomatoes, basil and mozzarella", "chicken thighs, honey and garlic", "yogurt, berries and honey",
    "canned salmon, potatoes and dill", "eggplant, tomatoes and garlic", "corn, peppers and cheese",
    "apples, cinnamon and oats", "spinach, ricotta and pasta", "kale, white beans and parmesan",
    "shrimp, garlic and rice",
)
PANTRY_TEMPLATES = (
    "I have {x}. What can I cook?", "What can I make for dinner with {x}?", "Suggest a recipe that uses {x}.",
    "All I have left is {x}. Any ideas for a meal?", "Give me two quick recipes using {x}.",
    "What's something tasty I can make from {x}?",
)

# --- summary: hand-written passages (facts, fictional news and notices, short fiction) -------------------------------
SUMMARY_PASSAGES = (
    "Honeybees tell each other where to find food with a movement called the waggle dance. A forager returning to "
    "the hive walks in a figure-eight pattern and shakes her body during the straight part of the run. The direction "
    "of that run shows the direction of the food relative to the sun. The length of the waggle indicates how far away "
    "the flowers are. Other bees follow the dancer closely and then fly out to find the source themselves.",
    "In September 1666 a fire broke out in a bakery on Pudding Lane in London. Strong winds and closely packed wooden "
    "houses helped it spread quickly. Over four days it destroyed more than thirteen thousand houses and the old St "
    "Paul's Cathedral. The recorded death toll was small, though historians think the real number was higher. "
    "Afterwards, the city was rebuilt with wider streets and more buildings of brick and stone.",
    "The town council of Millbrook voted on Tuesday to turn the empty lot on Elm Street into a community garden. The "
    "plan includes thirty raised beds, a tool shed and a small play area for children. Residents will be able to rent "
    "a bed for a small yearly fee, and ten beds will be reserved for the local school. Construction is expected to "
    "start in the spring, and the garden should open by early summer.",
    "Most adults need seven to nine hours of sleep per night. During sleep the brain cycles through several stages, "
    "including deep sleep and REM sleep, when most vivid dreaming happens. Deep sleep helps the body recover, while "
    "REM sleep seems to play a role in memory and learning. Going to bed at a regular time and avoiding screens just "
    "before bed can make it easier to fall asleep.",
    "Mira had kept the old brass key in her drawer for years without knowing what it opened. When her grandmother's "
    "house was sold, she helped clear out the attic and found a small wooden chest under a pile of blankets. The key "
    "fit perfectly. Inside were dozens of letters her grandfather had written during his travels, each describing a "
    "city he hoped to show her someday. Mira decided to visit every one of them.",
    "I bought this blender three months ago and mostly use it for morning smoothies. It crushes ice and frozen fruit "
    "easily, and the jug is simple to rinse clean. The downside is the noise: it is loud enough to wake people in the "
    "next room. The lid also needs to be pressed down firmly or it leaks. Overall it is good value for the price, "
    "but not for anyone who makes smoothies at dawn.",
    "Hi team, a quick reminder that the office will be closed on Friday for the building's electrical inspection. "
    "Please take your laptops home on Thursday evening so you can work remotely. The weekly planning meeting will "
    "move to Monday at 10 a.m. and will be held online. If you need anything printed before Friday, ask Sam by "
    "Wednesday. Thanks, and have a good weekend.",
    "Octopuses are among the most intelligent invertebrates. They have about five hundred million neurons, and most "
    "of them are in their eight arms rather than the central brain. Octopuses can change the color and texture of "
    "their skin in a fraction of a second to hide from predators. In experiments they have learned to open jars and "
    "find their way through simple mazes. Most species live only one to two years.",
    "Around 1440, Johannes Gutenberg developed a printing press with movable metal type in Mainz, Germany. Before "
    "this, books in Europe were mostly copied by hand, which made them rare and expensive. The new method produced "
    "many identical copies of a text quickly. Within a few decades printing shops had spread to cities across "
    "Europe. Cheaper books helped ideas travel faster and contributed to rising literacy.",
    "The Riverside Otters won their first regional basketball title on Saturday, beating the Hillcrest Hawks 68 to "
    "61. The Otters trailed by nine points at halftime but tightened their defense in the second half. Point guard "
    "Jamie Ortiz scored 22 points, including two late three-pointers. Coach Lena Park said the team had worked all "
    "season on staying calm under pressure. The Otters will play in the state tournament next month.",
    "Drinking enough water helps the body control its temperature, move nutrients and remove waste. How much a "
    "person needs depends on their size, activity level and climate. Much of our water comes from food as well as "
    "drinks, especially fruit, vegetables and soups. Thirst is usually a reliable signal, though older adults may "
    "feel it less strongly. Pale yellow urine is a simple sign of being well hydrated.",
    "On July 20, 1969, the Apollo 11 lunar module landed on the Moon. Neil Armstrong became the first person to walk "
    "on its surface, followed by Buzz Aldrin, while Michael Collins stayed in orbit in the command module. The "
    "astronauts collected rock and soil samples and set up experiments. Hundreds of millions of people watched the "
    "broadcast on television. The crew returned safely to Earth four days later.",
    "The Oakridge Public Library will extend its opening hours starting next month. On weekdays it will stay open "
    "until 9 p.m., and on Sundays it will open from noon to 5 p.m. for the first time. The change follows a survey "
    "showing that many residents could not visit during working hours. The library is also adding a quiet study "
    "room that can be booked online for up to two hours at a time.",
    "Compound interest means earning interest on both your original savings and the interest they have already "
    "earned. For example, if you save 1,000 dollars at 5 percent a year, you have 1,050 after one year and 1,102.50 "
    "after two. The growth seems slow at first but speeds up over long periods. This is why advisors often recommend "
    "starting to save early, even with small amounts.",
    "A small robot named Pip worked in a busy bakery, carrying trays from the oven to the shop window. Every night, "
    "after the bakers went home, Pip practiced decorating cakes with leftover icing. For months its flowers looked "
    "like lumpy clouds. One morning the head baker was ill on the day of a big wedding order, and Pip offered to "
    "help. The cake was not perfect, but the couple said it was the happiest-looking cake they had ever seen.",
    "Iceland sits on the Mid-Atlantic Ridge, where the North American and Eurasian plates are slowly moving apart. "
    "This makes the island one of the most volcanically active places on Earth. Iceland puts the heat underground to "
    "use: geothermal energy heats most of its homes and helps produce electricity. Hot springs and geysers also "
    "attract many tourists each year.",
    "Regular physical activity benefits almost every part of the body. It strengthens the heart and lungs, helps "
    "control weight and builds muscle and bone. Exercise also improves mood and can reduce stress and anxiety. "
    "Health guidelines often suggest about 150 minutes of moderate activity per week, such as brisk walking. Even "
    "short sessions spread across the day count toward that goal.",
    "The Silk Road was a network of trade routes connecting China with Central Asia, the Middle East and Europe. It "
    "was active for many centuries, starting around the second century BCE. Merchants traded silk, spices, paper, "
    "glass and many other goods. Ideas, religions and technologies also traveled along these routes. Few traders "
    "crossed the whole distance; goods usually passed through many hands.",
    "A local startup called Brightleaf has released an app that helps neighbors share tools instead of buying them. "
    "Users list items such as ladders, drills and lawn mowers, and others can borrow them for a small deposit. In its "
    "first three months the app signed up about four thousand users in the city. The founders hope to expand to two "
    "more cities next year if they can raise more funding.",
    "Tardigrades, sometimes called water bears, are tiny animals usually less than a millimeter long. They live in "
    "moss, soil, oceans and many other places. When their surroundings dry out, they curl up, lose most of their "
    "water and enter a state in which their metabolism almost stops. In this state they can survive extreme cold, "
    "heat and even radiation, then revive when water returns.",
    "Dear Aunt Rosa, thank you so much for the birthday sweater. It's exactly my color and it fits perfectly. I wore "
    "it on our school trip to the mountains last week, and it kept me warm even when it snowed. We saw a herd of deer "
    "and built a huge snowman near the cabin. I hope you can visit us in the summer so I can show you the photos. "
    "Love, Tomas.",
    "On December 17, 1903, Orville and Wilbur Wright made the first controlled, powered airplane flights near Kitty "
    "Hawk, North Carolina. The first flight lasted about twelve seconds and covered roughly 120 feet. The brothers "
    "had spent years testing gliders and built their own wind tunnel to study wing shapes. They also designed a "
    "lightweight engine for their aircraft.",
    "At Monday's meeting the parent-teacher association agreed to hold a book sale in November to raise money for "
    "new playground equipment. Volunteers will collect donated books during October. The association also discussed "
    "starting a walking bus so that younger children can walk to school in supervised groups. A survey will be sent "
    "to families to see how many would join. The next meeting is on the first Monday of next month.",
    "Coffee is believed to have first been brewed as a drink in Yemen in the fifteenth century, though legends place "
    "its discovery in Ethiopia. It spread to Egypt, Turkey and Persia, where coffee houses became popular places to "
    "talk, play games and listen to music. By the seventeenth century coffee had reached Europe, and coffee houses "
    "opened in cities such as Venice, London and Paris.",
    "Every winter the village of Hollowmere lost its light for three days, when the sun dipped behind the tall "
    "mountains. The villagers hung lanterns on every door and told stories to pass the time. One year a girl named "
    "Edda noticed that the lanterns made a pattern when seen from the hill above the village. She drew it on paper "
    "and discovered it was a map, left by the village founders, pointing to a hidden spring of warm water.",
    "Recycling works best when materials are clean and sorted correctly. Food left on containers can contaminate a "
    "whole batch of paper or plastic. Many programs accept only certain types of plastic, often marked with a number "
    "inside a small triangle. Plastic bags, batteries and electronics usually need to go to special drop-off points. "
    "Checking local rules is the simplest way to recycle more effectively.",
    "In 1914 Ernest Shackleton set out to cross Antarctica, but his ship, the Endurance, became trapped in sea ice. "
    "After months of drifting, the ship was crushed and sank, leaving the crew camping on the ice. They eventually "
    "reached Elephant Island in lifeboats. Shackleton and five men then sailed about 800 miles in a small boat to "
    "South Georgia to find help. Remarkably, every member of the Endurance crew survived.",
    "Forecasters expect heavy rain across the northern valley from Thursday evening through Saturday morning. Up to "
    "80 millimeters could fall in some areas, and small rivers may rise quickly. Residents of low-lying "
    "neighborhoods are advised to move cars to higher ground and avoid driving through flooded roads. Schools will "
    "stay open on Friday, but outdoor sports events have been postponed. Drier weather should return on Sunday.",
    "Light pollution is excessive or badly aimed artificial light that brightens the night sky. In many cities, "
    "people can see only a handful of stars. Bright lights at night can confuse migrating birds and disturb insects "
    "and other animals. They may also affect human sleep. Simple measures, such as shielded street lamps that point "
    "downward and switching off unnecessary lights, can reduce the problem.",
    "Green Valley Animal Shelter is looking for weekend volunteers. Tasks include walking dogs, cleaning enclosures, "
    "socializing cats and helping at adoption events. No experience is needed, as all volunteers get a two-hour "
    "training session. Volunteers must be at least sixteen and able to commit to one shift per month. Anyone "
    "interested can fill out the form on the shelter's website or ask at the front desk.",
    "In 1928 Alexander Fleming noticed that a mold growing on one of his culture plates had killed the bacteria "
    "around it. The mold was Penicillium, and the substance it produced became known as penicillin. Only in the early "
    "1940s did scientists, including Howard Florey and Ernst Chain, find a way to produce it in large amounts. "
    "Penicillin became the first widely used antibiotic and saved countless lives.",
    "Leo had promised his little sister he would fix her broken kite before the festival. He spent the whole "
    "afternoon taping the torn paper and replacing a snapped stick with a chopstick from the kitchen. When they "
    "reached the beach, the wind was so strong that most kites were crashing. Theirs wobbled, dipped and then rose "
    "higher than any other. His sister laughed all the way home and named the kite Chopstick.",
    "An emergency fund is money set aside for unexpected costs, such as car repairs, medical bills or a sudden loss "
    "of income. Many experts suggest saving enough to cover three to six months of essential expenses. The money "
    "should be kept somewhere safe and easy to reach, like a savings account, rather than invested in stocks. "
    "Building it slowly, with a small automatic transfer each payday, makes the goal feel manageable.",
    "Easter Island, or Rapa Nui, is a remote island in the Pacific Ocean famous for its giant stone statues called "
    "moai. The statues were carved by the Rapa Nui people, mostly from volcanic rock at a quarry called Rano Raraku. "
    "There are nearly a thousand of them, and some are about ten meters tall. Researchers still debate how they were "
    "moved, but one theory suggests they were walked upright using ropes.",
    "The city museum's new exhibit, Toys Through Time, opens this Saturday. It features more than three hundred toys "
    "from the last two centuries, from hand-carved wooden animals to early video game consoles. Visitors can try a "
    "few of the games in an interactive room. Entry is free for children under twelve. The museum will also run "
    "weekend workshops where families can build simple toys together.",
    "Every autumn, millions of monarch butterflies in eastern North America fly south to spend the winter in the "
    "forests of central Mexico. Some travel more than 4,000 kilometers. No single butterfly makes the full round "
    "trip: the journey north in spring takes several generations. Scientists believe the butterflies use the "
    "position of the sun, and possibly Earth's magnetic field, to find their way.",
    "Working from home can save time and money on commuting, but it also blurs the line between work and personal "
    "life. Many people find it helps to have a dedicated workspace, even if it is just a corner of a room. Keeping "
    "regular hours and taking short breaks away from the screen can prevent burnout. It is also worth making an "
    "effort to stay in touch with colleagues informally.",
    "The Rosetta Stone is a slab of granodiorite found in 1799 near the town of Rashid in Egypt. It carries the same "
    "decree in three scripts: Egyptian hieroglyphs, Demotic script and ancient Greek. Because scholars could read "
    "the Greek, the stone offered a key to the hieroglyphs. Jean-Francois Champollion announced his breakthrough in "
    "deciphering them in 1822. The stone is now displayed in the British Museum in London.",
    "The colony ship Aurora had been traveling for two hundred years when its computer woke engineer Sela Quinn "
    "early. A small meteor had damaged one of the water tanks, and the sleeping crew would need that water when they "
    "arrived. Sela had eleven days to repair the tank alone. She talked to the ship's computer to keep herself "
    "company, and by the time the repair was done, she had taught it how to tell jokes.",
    "Hello, I ordered a pair of hiking boots from your store on March 3 and they arrived yesterday. Unfortunately, "
    "the left boot is a size 9 and the right boot is a size 10. I would like to exchange them for a matching pair in "
    "size 10. I've kept the original box and receipt. Could you tell me how to send them back and whether I need to "
    "pay for shipping? Thank you, Daniel.",
    "About 66 million years ago, a large asteroid struck the Earth near what is now the Yucatan Peninsula in Mexico. "
    "The impact threw huge amounts of dust and gas into the atmosphere, blocking sunlight and cooling the climate. "
    "Plants struggled to grow, and food chains collapsed. Around three-quarters of plant and animal species went "
    "extinct, including all non-bird dinosaurs. Small mammals and birds were among the survivors.",
    "A new report from the city transport office shows that the number of people cycling to work has doubled in five "
    "years. The increase followed the opening of 40 kilometers of protected bike lanes. Accidents involving cyclists "
    "fell over the same period. However, the report notes that bike parking near train stations is often full by "
    "8 a.m. The office plans to add 500 parking spaces next year.",
    "A new habit is easier to build when it is small and tied to something you already do. For example, someone who "
    "wants to stretch daily might do it right after brushing their teeth. Tracking progress on a calendar can be "
    "motivating, because people like to avoid breaking a streak. Missing a single day is not a failure; what matters "
    "is returning to the habit quickly.",
    "A crow found a piece of cheese and flew up to a branch to eat it. A fox below wanted the cheese, so he praised "
    "her shiny feathers and said her voice must be the loveliest in the forest. Flattered, the crow opened her beak "
    "to sing, and the cheese fell straight into the fox's mouth. As he trotted away, the fox told her never to trust "
    "a flatterer.",
    "Marie Curie was a physicist and chemist who did pioneering research on radioactivity. With her husband Pierre, "
    "she discovered the elements polonium and radium. In 1903 she shared the Nobel Prize in Physics, and in 1911 she "
    "won the Nobel Prize in Chemistry. She was the first person to win Nobel Prizes in two different sciences. Her "
    "work helped lay the groundwork for treating cancer with radiation.",
    "Starting next week, the Corner Cafe will offer a new lunch menu with three daily soups, a build-your-own salad "
    "bar and sandwiches on homemade bread. Prices will stay the same. The cafe is also starting a reusable cup "
    "program: customers who bring their own cup get a small discount on hot drinks. Opening hours remain 7 a.m. to "
    "4 p.m., Monday to Saturday.",
    "Glaciers are large masses of ice that form where more snow falls in winter than melts in summer. Over many "
    "years the snow compresses into dense ice, and the glacier slowly flows downhill under its own weight. As they "
    "move, glaciers carve valleys, carry rocks and leave behind ridges of debris called moraines. Many glaciers "
    "around the world have been shrinking in recent decades as temperatures rise.",
    "When the school's prize-winning pumpkin disappeared the night before the fair, everyone suspected the rival "
    "school. But Nadia noticed a trail of seeds leading from the greenhouse to the gym. She followed it and found the "
    "pumpkin behind the stage, next to a proud janitor. He had moved it inside to protect it from the frost forecast "
    "for that night and had forgotten to leave a note.",
)
SUMMARY_TEMPLATES = (
    "Summarize this for a ten-year-old:\n\n{x}", "Give me a one-sentence summary:\n\n{x}",
    "What are the key points of this text?\n\n{x}", "{x}\n\nTL;DR?", "{x}\n\nCan you summarize that in two sentences?",
    "Summarize the following in three bullet points.\n\n{x}", "Please write a short summary of this passage:\n\n{x}",
    "{x}\n\nWhat is the main idea of this paragraph?", "Turn this into a headline and a one-sentence summary:\n\n{x}",
    "Read this and tell me the most important thing to remember:\n\n{x}", "{x}\n\nSum this up in under 25 words.",
    "I don't have time to read this. What does it say?\n\n{x}",
    "Summarize this text, then list any names, dates or numbers it mentions.\n\n{x}",
    "Rewrite this as a short summary in plain English:\n\n\"{x}\"",
    "{x}\n\nExplain what this passage is about to a friend who hasn't read it.",
    "Make a summary of this text in a friendly tone.\n\n{x}",
)

# --- advice: everyday situations, first person ({x} lowercase, {X} capitalized) -------------------------------------
ADVICE_SITUATIONS = (
    "I just moved to a new city and don't know anyone", "my roommate never does the dishes",
    "I can't decide whether to take a job with higher pay but a longer commute", "I keep procrastinating on my thesis",
    "my coworker takes credit for my ideas", "I want to start saving money but I live paycheck to paycheck",
    "my best friend forgot my birthday", "I have a job interview tomorrow and I'm really nervous",
    "my teenager spends all day on their phone", "I want to learn to cook but I don't know where to begin",
    "I'm thinking about adopting a dog but I work full time", "my neighbor's dog barks all night",
    "I have too many hobbies and never finish anything", "I got a bad grade on my first college exam",
    "I want to ask my manager for more flexible hours", "my parents want me to study law but I love art",
    "I'm going on my first solo trip abroad", "I have a wedding to attend and no idea what to give as a gift",
    "I want to run a 5K in two months but I've never run before", "I spend too much money on takeout",
    "my sister and I argue every time we talk about politics", "I can't keep my houseplants alive",
    "I want to make new friends as an adult", "I'm starting a new job next week",
    "I keep waking up at 3 a.m. and can't fall back asleep", "my kid is being teased at school",
    "I need to tell my landlord that the heating is broken", "I'm moving in with my partner for the first time",
    "I'm overwhelmed by my email inbox", "I have to tell a colleague that their work isn't good enough",
    "I want to switch careers at forty", "I lent money to a friend and they haven't paid it back",
    "I'm hosting my in-laws for a whole week", "I feel lonely working from home",
    "I have to give a presentation in front of 200 people", "I'm buying my first used car",
    "I want to read more books but never find the time", "my toddler won't go to bed",
    "I'm learning Spanish but I'm afraid to speak it", "my elderly father refuses to use a cell phone",
    "I'm planning a vegetable garden for the first time", "I need to write a speech for my best friend's wedding",
    "my team at work keeps missing deadlines", "I'm retiring next year and worry about being bored",
    "I want to declutter my apartment but I'm attached to my things",
    "I was offered a promotion that means managing my former peers", "I have two job offers and can't choose",
    "I want to stop biting my nails", "I'm a student with a very tight food budget", "my cat scratches the sofa",
    "I'm anxious about flying", "I want to keep a long-distance friendship alive",
    "I forget people's names right after meeting them", "I want to ask someone out but I'm shy",
    "my group project partners aren't doing their share", "I'm going to my first job fair",
    "I'm burned out but can't take a long vacation", "I want to start a small side business selling crafts",
    "I'm choosing between two universities", "I want to eat healthier without spending much more",
    "I have trouble saying no to people", "my grandmother is moving into a care home",
    "I'm about to become a parent for the first time", "I'm training to hike up a big mountain next summer",
    "I feel stuck in my current job", "my friends always pick restaurants I can't afford",
    "I want to volunteer but don't know what would suit me", "I'm nervous about driving on the highway",
    "I'm looking after a friend's plants and fish for two weeks", "I want to be more organized at work",
    "my upstairs neighbors are very loud", "I was rejected from my dream job", "I've been asked to mentor a new intern",
    "I want to reconnect with an old friend I lost touch with", "I'm trying to get my family to recycle more",
    "I can't stop checking social media", "I'm going to a dinner party where I won't know anyone",
    "my study group keeps getting distracted", "I want to learn the piano as an adult",
    "I received a rude email from a client", "I accidentally broke a vase at a friend's house",
    "I need to choose a laptop for university", "I'm planning a budget vacation with three friends",
    "I have a big exam in three days and haven't started studying", "I'm moving abroad for work and leaving my family",
    "my partner and I disagree about how to split chores", "I want to start journaling but don't know what to write",
    "my dog pulls hard on the leash", "I'm unsure whether to rent or buy a home",
    "I'm a new manager and my team doesn't trust me yet", "I want to help my kids with math but I've forgotten it all",
    "I forgot an important deadline at work", "my friend is going through a breakup",
    "I want to get better at small talk", "I get distracted by noise in my open-plan office",
    "I'm writing my first novel and keep losing motivation", "I'm thinking about going back to school part-time",
    "I want my mornings to feel less rushed", "my child wants a pet but I'm not sure they're ready",
    "I'm visiting Japan for the first time", "I've been invited to speak at a local event",
    "I want to cut down on sugar", "my phone battery dies by lunchtime",
)
ADVICE_TEMPLATES = (
    "{X}. Any advice?", "{X}. What should I do?", "I need some advice: {x}.", "{X}. How should I handle this?",
    "Can you help? {X}.", "{X}. What would you suggest?", "What would you do in my place? {X}.",
    "{X}. Where do I even start?", "Honest advice, please: {x}.", "{X}. Give me three practical tips.",
    "{X}. What are my options?", "My situation: {x}. What's a good first step?", "{X}, and I'm not sure what to do.",
    "{X}. How do other people deal with this?", "Looking for tips: {x}.",
)

# --- compare: things people choose between, and things people confuse ((a, b) pairs) --------------------------------
CHOICE_PAIRS = (
    ("tea", "coffee"), ("renting", "buying a home"), ("a laptop", "a tablet"), ("a cat", "a dog as a first pet"),
    ("running", "swimming for fitness"), ("an e-reader", "paper books"), ("a gas stove", "an induction cooktop"),
    ("butter", "margarine"), ("a savings account", "an index fund"), ("the train", "a plane for a 500 km trip"),
    ("living in the city", "living in the countryside"), ("a hybrid car", "a fully electric car"),
    ("studying in the morning", "studying at night"), ("yoga", "pilates"), ("brown rice", "white rice"),
    ("freelancing", "a full-time job"), ("an electric toothbrush", "a manual toothbrush"),
    ("LED bulbs", "halogen bulbs"), ("a heat pump", "a gas boiler"), ("an Android phone", "an iPhone"),
    ("Windows", "macOS"), ("a public school", "a private school"), ("learning guitar", "learning piano"),
    ("hiking boots", "trail running shoes"), ("a road bike", "a mountain bike"), ("a hotel", "a vacation rental"),
    ("a cruise", "a road trip"), ("a gym membership", "working out at home"), ("free weights", "gym machines"),
    ("cardio", "strength training"), ("an air fryer", "a convection oven"),
    ("a French press", "a drip coffee maker"), ("cast iron", "nonstick pans"), ("olive oil", "sunflower oil"),
    ("Greek yogurt", "regular yogurt"), ("frozen vegetables", "fresh vegetables"),
    ("a smartwatch", "a fitness tracker"), ("streaming music", "buying albums"), ("podcasts", "audiobooks"),
    ("a paper planner", "a calendar app"), ("handwritten notes", "typed notes"),
    ("a desktop", "a laptop for gaming"), ("a startup", "a big company for a first job"),
    ("working from home", "working in an office"), ("a small wedding", "a big wedding"),
    ("a puppy", "an adult rescue dog"), ("a backpack", "a suitcase for a month of travel"),
    ("wool socks", "cotton socks for hiking"), ("linen sheets", "cotton sheets"), ("a condo", "a house"),
    ("a dishwasher", "washing dishes by hand"), ("a robot vacuum", "a regular vacuum"),
    ("wired headphones", "wireless earbuds"), ("a mechanical keyboard", "a regular keyboard"),
    ("a city break", "a beach holiday"), ("learning French", "learning Spanish"),
    ("a 15-year mortgage", "a 30-year mortgage"), ("laminate", "hardwood floors"), ("paint", "wallpaper"),
    ("boiling", "steaming vegetables"), ("a hostel", "a hotel for a solo trip"), ("leasing a car", "buying a car"),
    ("taking the bus", "cycling to work"), ("a treadmill", "running outside"),
    ("meditation", "journaling for stress"), ("a nap", "a coffee for an afternoon slump"),
    ("a budget airline", "a full-service airline"), ("a tent", "a hammock for camping"),
    ("a marathon", "a half marathon as a first race"), ("tennis", "badminton"),
    ("a fixed-rate", "a variable-rate loan"),
    ("a prepaid phone plan", "a monthly contract"), ("a microwave", "an oven for reheating leftovers"),
    ("a real Christmas tree", "an artificial one"), ("contact lenses", "glasses"),
)
CHOICE_TEMPLATES = (
    "{A} or {b}: which is better?", "Should I choose {a} or {b}?", "Compare {a} and {b} in a short table.",
    "What are the pros and cons of {a} versus {b}?", "I can't decide between {a} and {b}. Help me choose.",
    "Is {a} really better than {b}?", "{A} vs. {b}: what should I consider?",
    "Which makes more sense for me, {a} or {b}? Ask me a few questions first if you need to.",
    "In what situations would you pick {a} over {b}?", "Give me a quick comparison of {a} and {b}.",
    "Help me weigh {a} against {b}.", "What would you recommend for a beginner: {a} or {b}?",
)
DISTINCTION_PAIRS = (
    ("weather", "climate"), ("a virus", "a bacterium"), ("a crocodile", "an alligator"), ("a frog", "a toad"),
    ("a hurricane", "a tornado"), ("a lake", "a pond"), ("a comet", "an asteroid"), ("'affect'", "'effect'"),
    ("'fewer'", "'less'"), ("a simile", "a metaphor"), ("a democracy", "a republic"), ("stocks", "bonds"),
    ("jam", "jelly"), ("a latte", "a cappuccino"), ("a sweet potato", "a yam"), ("a cold", "the flu"),
    ("a sprain", "a strain"), ("a psychologist", "a psychiatrist"), ("a novel", "a novella"),
    ("a biography", "an autobiography"), ("a violin", "a viola"), ("jazz", "blues"), ("a moth", "a butterfly"),
    ("a rabbit", "a hare"), ("a seal", "a sea lion"), ("a meteor", "a meteorite"), ("a star", "a planet"),
    ("a stew", "a soup"), ("a muffin", "a cupcake"), ("sushi", "sashimi"), ("baking soda", "baking powder"),
    ("a resume", "a CV"), ("a credit union", "a bank"), ("a will", "a trust"), ("an herb", "a spice"),
    ("a dolphin", "a porpoise"), ("a mountain", "a hill"), ("a town", "a city"), ("speed", "velocity"),
    ("mass", "weight"), ("an idiom", "a proverb"), ("latitude", "longitude"), ("a typhoon", "a hurricane"),
    ("an ape", "a monkey"), ("a tortoise", "a turtle"), ("empathy", "sympathy"), ("a debit card", "a credit card"),
    ("an emu", "an ostrich"),
)
DISTINCTION_TEMPLATES = (
    "What's the difference between {a} and {b}?", "How can I tell {a} from {b}?",
    "People mix up {a} and {b}. How are they different?", "Explain {a} versus {b} in simple terms.",
    "Are {a} and {b} the same thing?", "What do {a} and {b} have in common, and how are they different?",
    "Quick one: {a} vs. {b}?", "My friend says {a} and {b} are basically the same. Is that right?",
    "Give me an easy way to remember the difference between {a} and {b}.", "Describe {a} and {b} side by side.",
)

# --- list: requests for a number of ideas, names, tips ({x} plural noun phrase, {n} a count) ------------------------
LIST_REQUESTS = (
    "ideas for a rainy day at home", "names for a gray kitten", "healthy snacks to bring to work",
    "things to pack for a weekend camping trip", "ways to save money on groceries",
    "questions to ask at the end of a job interview", "fun activities for a child's birthday party",
    "icebreaker questions for a team meeting", "easy houseplants for beginners", "hobbies I can start for free",
    "ways to unwind after work", "gift ideas for a dad who has everything", "cheap date ideas",
    "things to do in a small town on a Sunday", "breakfast ideas without eggs", "exercises I can do without equipment",
    "tips for a long road trip with kids", "words that rhyme with 'light'", "synonyms for 'happy'",
    "adjectives to describe the ocean", "conversation starters for a dinner party", "ways to use leftover rice",
    "board games for a family night", "outdoor games for kids", "things to check before buying a used car",
    "essential kitchen tools for a first apartment", "ways to be more productive in the morning",
    "topics for a school science project", "ideas for a short story", "fun facts about octopuses",
    "important inventions of the 20th century", "ways to make a small bedroom feel cozy", "team names for a pub quiz",
    "things to do on a long layover", "podcast topic ideas", "names for a neighborhood bakery",
    "slogans for a recycling campaign", "ways to practice gratitude",
    "things to write in a birthday card for a coworker",
    "vegetables that are easy to grow on a balcony", "tips for sleeping on a long flight",
    "ways to keep cool in summer without air conditioning", "budget-friendly weekend activities",
    "fun ways to learn the multiplication tables", "easy dinners for busy weeknights", "themes for a garden party",
    "good study habits for students", "ways to make a long meeting more efficient",
    "things every first aid kit should have", "ways to reuse glass jars", "campfire activities",
    "winter activities for families", "ways to celebrate a friend's promotion", "questions to ask a new babysitter",
    "signs that a plant needs more light", "reasons to learn a second language", "things to do before moving house",
    "fun Friday activities for an office", "ways to motivate yourself to exercise",
    "mistakes to avoid when painting a room",
    "ideas for a photo project", "questions to ask on a first date", "ways to reduce food waste",
    "healthy drinks that aren't water", "things to bring to a picnic", "superhero names for a kid's comic",
    "ideas for a themed dinner night", "fun facts about space", "ways to decorate a classroom",
    "topics for a debate club",
    "staples to keep in a pantry", "things to do in the first week at a new job", "creative writing prompts",
    "reasons why sleep matters", "ways to make friends at university", "things to buy for a new puppy",
    "ideas for a homemade Halloween costume", "ways to spend less time on my phone", "riddles for kids",
    "stretches for people who sit all day", "simple science experiments for kids", "party games for adults",
    "names for a fantasy kingdom", "names for a pet goldfish", "questions for a get-to-know-you game",
    "ways to learn vocabulary faster", "uses for baking soda around the house", "habits of organized people",
    "tips for writing a clear email", "ways to welcome a new neighbor", "low-cost ways to travel",
    "activities for a long train ride", "things to look for when renting an apartment", "quick lunch ideas for kids",
    "fruits that are high in vitamin C", "ways to keep a dog entertained indoors", "ideas for a family reunion",
    "themes for a school dance", "ways to cheer up a friend", "sports that are easy to start as an adult",
    "chores kids can help with", "ideas for a bucket list", "names for a book club",
    "things to do when you can't sleep",
    "questions to ask a landlord before signing a lease", "ways to make a house more energy efficient",
    "nicknames for a grandmother", "memory tricks for remembering the planets", "ideas for a science fair poster",
)
LIST_COUNTS = ("3", "5", "7", "10", "three", "four", "five", "six", "eight", "ten")
LIST_TEMPLATES = (
    "Give me {n} {x}.", "List {n} {x}.", "Can you suggest {n} {x}?", "I need {n} {x}.", "Brainstorm {n} {x} for me.",
    "Make a numbered list of {n} {x}.", "Quick list: {n} {x}, please.", "Could you come up with {n} {x}?",
    "Share {n} {x}, with one line about each.", "What are some {x}? Give me {n}.",
    "Help me brainstorm {x}. I'd like at least {n}.", "Write a bullet list of {n} {x}.", "Top {n} {x}?",
    "I'm looking for {x}. Can you list {n}?",
)

# --- story: written premises, and character + goal + setting combinations ------------------------------------------
STORY_PREMISES = (
    "a lighthouse keeper who finds a message in a bottle", "a dragon who is afraid of fire",
    "a girl who can talk to trees", "a robot learning to make friends", "two rival bakers who must work together",
    "a lost dog finding its way home across a big city", "a grandmother who secretly used to be a pirate",
    "a boy who wakes up able to understand cats", "a town where it has rained for a hundred days",
    "a librarian who discovers a book that writes itself", "an astronaut stranded on a friendly planet",
    "a snowman who wants to see summer", "a detective mouse solving a cheese theft",
    "a shy giant who lives under a bridge", "a violin that plays by itself at midnight",
    "twins who swap places for a day", "an old clock that can stop time for one minute", "a penguin who wants to fly",
    "a kid who builds a time machine out of a cardboard box", "the last tree in a city",
    "a ghost who is afraid of people", "a chef who loses their sense of taste",
    "a mail carrier who delivers to the Moon",
    "a group of friends who find a map hidden in their school", "a turtle who wins a race by clever planning",
    "an inventor whose inventions all go slightly wrong", "a fox and a rabbit who become best friends",
    "a village that wakes up with no colors", "a knight who would rather be a gardener",
    "a child who finds a tiny door behind the bookshelf", "a cloud that wants to rain over a desert",
    "a retired superhero who now runs a flower shop", "a small boat on a big adventure",
    "a witch who cannot get her spells right", "a teacher on the last day before retirement",
    "a city where everyone speaks in song", "a kid's first day at school in a new country",
    "a train that travels through dreams", "an octopus who escapes from an aquarium to see the sea",
    "a farmer who grows a pumpkin as big as a house", "a girl who finds out where lost socks go",
    "a painter whose paintings come alive at night", "a family road trip where everything goes wrong",
    "a bear who opens a cafe in the forest", "a message from the future hidden in a sandwich",
    "the first person to reach Mars", "an owl who can't stay awake at night",
    "a soccer team of misfits that reaches the final", "a homesick alien disguised as a school student",
    "a key that opens any door, but only once",
)
STORY_CHARACTERS = (
    "a curious hedgehog", "an elderly inventor", "a nervous young wizard", "a tiny robot", "a brave little sister",
    "a grumpy cat", "a retired sea captain", "a clumsy knight", "a talking umbrella", "a lonely lighthouse keeper",
    "a kind dragon", "the new kid in class", "a forgetful princess", "a street musician", "a baby elephant",
    "a detective who is scared of the dark", "a polar bear", "a mischievous fox", "a young astronaut",
    "a friendly ghost",
)
STORY_GOALS = (
    "who wants to win a baking contest", "who has lost something very important", "who must deliver a secret message",
    "who is looking for a new home", "who dreams of seeing the ocean", "who accidentally shrinks to the size of an ant",
    "who has to make a difficult choice", "who is trying to keep a promise", "who finds a mysterious egg",
    "who wants to learn to dance", "who gets lost on the way home", "who discovers a hidden talent",
    "who must stop a storm", "who is planning a surprise for a friend", "who wakes up with a strange new power",
)
STORY_SETTINGS = (
    "in a snowy mountain village", "on a pirate ship", "in a busy city market", "in an underwater kingdom",
    "on a space station", "in a haunted library", "in a magical forest", "in a tiny apartment above a bakery",
    "at a summer camp", "in a desert town", "in the year 3000", "on a farm", "inside a video game",
    "at a royal palace", "on a train across the country",
)
STORY_TEMPLATES = (
    "Write a short story about {x}.", "Tell me a bedtime story about {x}.", "Write a 200-word story about {x}.",
    "Can you write a funny story about {x}?", "Write the opening paragraph of a novel about {x}.",
    "Write a fairy tale about {x}.", "I need a short story for my class about {x}. Keep it under 300 words.",
    "Write a first-person story about {x}.", "Write a story for kids about {x}, with a lesson at the end.",
    "Write a very short story (under 100 words) about {x}.", "Write a mystery story about {x}.",
    "Write a story told in diary entries about {x}.", "Write a poem that tells the story of {x}.",
    "Tell me a story about {x} that ends with a surprise.", "Write a short scene with dialogue about {x}.",
)

SUFFIXES = {
    "explain": ("Keep it short.", "Please use simple words.", "Answer in three sentences.", "Explain it like I'm ten.",
                "Use an analogy if you can.", "I'm a complete beginner.", "No jargon, please.",
                "One paragraph is enough."),
    "howto": ("Use a numbered list.", "Keep it brief.", "I'm a total beginner.", "I don't have any special tools.",
              "I'm on a tight budget.", "Please mention safety tips.", "Explain it in a friendly tone.",
              "Give me the steps in under 100 words."),
    "recipe": ("Suggest a vegetarian swap if possible.", "I have about 30 minutes.", "Please use metric measurements.",
               "It's for four people.", "Keep it simple, I'm a beginner cook.", "I don't have an oven.",
               "Make it kid-friendly.", "List the ingredients first."),
    "summary": (),
    "advice": ("Please be honest.", "Keep it short.", "Give me a numbered list of steps.", "Please be kind.",
               "What would you do first?", "Be practical.", "I'm 25, if that matters.", "Answer in a few sentences."),
    "compare": ("Answer in a short table.", "Keep it under 100 words.", "Explain it for a beginner.",
                "Use bullet points.", "Be brief.", "Use a simple example.", "In a friendly tone, please."),
    "list": ("Keep each item short.", "Add a one-line explanation for each.", "Make them suitable for kids.",
             "Number them, please.", "Be creative!", "Avoid the obvious ones.", "Put the best one first."),
    "story": ("Make it funny.", "Keep it under 150 words.", "Write it for a five-year-old.", "End with a twist.",
              "Use lots of dialogue.", "Give it a title.", "Make it a little spooky but not scary.",
              "Write it in the present tense."),
}

# --- math: seeded word problems (each function draws small numbers so that the answer is whole or a simple decimal) -
NAMES = ("Ava", "Ben", "Chloe", "Diego", "Emma", "Farid", "Grace", "Hiro", "Isla", "Jonas", "Kira", "Liam", "Maya",
         "Noah", "Olivia", "Priya", "Quinn", "Ravi", "Sofia", "Tom", "Uma", "Victor", "Wen", "Yusuf", "Zoe")
ITEMS = (("notebooks", "pens"), ("apples", "bananas"), ("comic books", "stickers"), ("cupcakes", "juice boxes"),
         ("T-shirts", "pairs of socks"), ("plant pots", "seed packets"), ("pencils", "erasers"))


def shopping_total(r):
    a, b = r.choice(ITEMS)
    return (f"{r.choice(NAMES)} buys {r.randint(2, 9)} {a} at ${r.randint(2, 9)} each and {r.randint(2, 9)} {b} at "
            f"${r.randint(1, 5)} each. How much is spent in total?")


def change_owed(r):
    bill, count = r.choice((20, 50, 100)), r.randint(2, 6)
    price = r.randint(1, min(9, (bill - 1) // count))
    return (f"{r.choice(NAMES)} pays with a ${bill} bill for {count} {r.choice(ITEMS)[0]} costing ${price} each. "
            "How much change should come back?")


def distance(r):
    vehicle, speed = r.choice((("train", r.randrange(60, 160, 10)), ("car", r.randrange(40, 110, 5)),
                               ("cyclist", r.randint(12, 25)), ("bus", r.randrange(30, 80, 5))))
    return f"A {vehicle} travels at {speed} km/h for {r.randint(2, 5)} hours. How far does it go?"


def travel_time(r):
    speed, hours = r.randint(10, 20), r.randint(2, 5)
    return f"{r.choice(NAMES)} cycles {speed * hours} km at a steady {speed} km/h. How long does the ride take?"


def recipe_scaling(r):
    people, per_person, new_people = r.randint(2, 6), r.randrange(25, 100, 25), r.randint(3, 12)
    ingredient = r.choice(("flour", "rice", "pasta", "sugar", "oats"))
    return (f"A recipe for {people} people needs {people * per_person} grams of {ingredient}. How much {ingredient} "
            f"do I need for {new_people} people?")


def discount(r):
    item, price = r.choice(("jacket", "pair of shoes", "lamp", "backpack", "bike helmet")), r.randrange(20, 200, 20)
    return f"A {item} costs ${price} and is on sale for {r.choice((10, 20, 25, 50))}% off. What is the sale price?"


def percent_of_group(r):
    total, pct = r.randrange(20, 200, 20), r.choice((5, 10, 20, 25, 50, 75))
    group, rest = r.choice((("students in a class", "walk to school"), ("people at a concert", "bought tickets online"),
                            ("members of a running club", "ran a marathon this year"),
                            ("trees in an orchard", "are apple trees")))
    return f"There are {total} {group}, and {pct}% of them {rest}. How many is that?"


def ages(r):
    name, age, times = r.choice(NAMES), r.randint(4, 12), r.randint(3, 5)
    return (f"{name} is {age} years old, and {name}'s mother is {times} times as old. How old will the mother be "
            f"when {name} turns {age + r.randint(3, 15)}?")


def room_area(r):
    width, length = r.randint(2, 9), r.randint(3, 12)
    return r.choice((f"A room is {width} m wide and {length} m long. How many square meters of carpet do we need?",
                     f"A garden is {width} m by {length} m. How many meters of fence go all the way around it?"))


def sharing(r):
    name, friends = r.choice(NAMES), r.randint(3, 8)
    things = r.choice(("stickers", "marbles", "cookies", "trading cards"))
    return (f"{name} has {friends * r.randint(3, 12) + r.randint(0, friends - 1)} {things} and shares them equally "
            f"among {friends} friends. How many does each friend get, and how many are left over?")


def clock_time(r):
    start, minutes = f"{r.randint(1, 9)}:{r.randrange(0, 60, 5):02d} p.m.", r.randrange(85, 175, 5)
    return f"A movie starts at {start} and lasts {minutes} minutes. What time does it end?"


def unit_price(r):
    small, large = r.randint(3, 6), r.randint(8, 12)
    cents_small, cents_large = r.randrange(40, 90, 5), r.randrange(30, 85, 5)
    return (f"A bag of {small} oranges costs ${small * cents_small / 100:.2f} and a bag of {large} oranges costs "
            f"${large * cents_large / 100:.2f}. Which bag is the better deal per orange?")


def saving_weeks(r):
    name, weekly, weeks = r.choice(NAMES), r.randrange(5, 30, 5), r.randint(4, 20)
    thing = r.choice(("a bike", "a guitar", "a video game console", "a skateboard", "a tent"))
    return (f"{name} saves ${weekly} every week. How many weeks until {name} can buy {thing} that costs "
            f"${weekly * weeks}?")


def fuel_use(r):
    per_100, trip = r.randint(5, 9), r.randrange(150, 900, 50)
    return f"A car uses {per_100} liters of fuel per 100 km. How much fuel does it need for a trip of {trip} km?"


def workers(r):
    crew, other = r.sample(range(2, 10), 2)
    days = other * r.randint(1, 3)  # so that crew * days / other is whole
    return (f"If {crew} workers can paint a building in {days} days, how long would it take {other} workers "
            "working at the same rate?")


def score_average(r):
    scores = [r.randint(60, 100) for _ in range(4)]
    scores[3] -= sum(scores) % 4
    return (f"{r.choice(NAMES)} scored {scores[0]}, {scores[1]}, {scores[2]} and {scores[3]} on four tests. What is "
            "the average score?")


def wages(r):
    name = r.choice(NAMES)
    return (f"{name} earns ${r.randint(12, 30)} per hour and works {r.randint(8, 40)} hours a week. How much does "
            f"{name} earn in {r.randint(2, 6)} weeks?")


def pizza_fraction(r):
    slices = r.choice((6, 8, 10, 12))
    first, second = r.randint(1, slices // 2), r.randint(1, slices // 2 - 1)
    name, friend = r.sample(NAMES, 2)
    return (f"A pizza is cut into {slices} equal slices. {name} eats {first} and {friend} eats {second}. What "
            "fraction of the pizza is left?")


def tank_volume(r):
    length, width, height = r.randrange(30, 130, 10), r.randrange(20, 60, 10), r.randrange(20, 60, 10)
    return (f"A fish tank is {length} cm long, {width} cm wide and {height} cm tall. How many liters of water does "
            "it hold when full?")


def temperature(r):
    start, rise, fall = r.randint(-5, 12), r.randint(3, 15), r.randint(5, 20)
    return (f"At 6 a.m. it was {start} degrees Celsius. By noon it had risen {rise} degrees, and by midnight it had "
            f"fallen {fall} degrees from the noon temperature. What was the temperature at midnight?")


MATH_PROBLEMS = (shopping_total, change_owed, distance, travel_time, recipe_scaling, discount, percent_of_group, ages,
                 room_area, sharing, clock_time, unit_price, saving_weeks, fuel_use, workers, score_average, wages,
                 pizza_fraction, tank_volume, temperature)
MATH_FRAMES = (
    "Can you help me solve this? {p}", "Explain step by step: {p}", "{p} Please show your working.",
    "My homework says: \"{p}\" How do I solve it?", "I'm stuck on this word problem: {p}",
    "{p} Can you explain how to get the answer?", "Help me with this math problem. {p}",
    "How would you solve this? {p}",
    "Word problem: {p} Walk me through it.", "My friend and I got different answers. {p} What's the right one?",
    "Solve this and explain each step simply: {p}", "Can you explain this so my 10-year-old understands? {p}", "{p}",
    "Please check my thinking on this one: {p}",
)


# (kind, template tuple, subject tuple, templates drawn per subject); subjects are strings or (a, b) pairs
TEMPLATED = (
    ("explain", "EXPLAIN_TEMPLATES", "EXPLAIN_QUESTIONS", 5), ("howto", "HOWTO_TEMPLATES", "HOWTO_TASKS", 5),
    ("recipe", "DISH_TEMPLATES", "DISHES", 5), ("recipe", "PANTRY_TEMPLATES", "PANTRY_INGREDIENTS", 4),
    ("summary", "SUMMARY_TEMPLATES", "SUMMARY_PASSAGES", 11), ("advice", "ADVICE_TEMPLATES", "ADVICE_SITUATIONS", 5),
    ("compare", "CHOICE_TEMPLATES", "CHOICE_PAIRS", 5), ("compare", "DISTINCTION_TEMPLATES", "DISTINCTION_PAIRS", 5),
    ("list", "LIST_TEMPLATES", "LIST_REQUESTS", 5), ("story", "STORY_TEMPLATES", "STORY_PREMISES", 5),
)


def upper_first(text: str) -> str:
    return text[0].upper() + text[1:]


def fill(rng: random.Random, kind: str, templates_name: str, items: list[tuple[str, dict]],
         per_item: int) -> list[dict]:
    """Prompts from `per_item` distinct templates per (source label, format fields) item; SUFFIX_RATE of them get one
    of SUFFIXES[kind]. Fields: x and X (subject, and capitalized) or a, A and b (pair); n (a count) is drawn here."""
    templates, out = globals()[templates_name], []
    for label, fields in items:
        for t in rng.sample(range(len(templates)), per_item):
            text = templates[t].format(n=rng.choice(LIST_COUNTS), **fields)
            source = f"template:{templates_name}[{t}] x {label}"
            if SUFFIXES[kind] and rng.random() < SUFFIX_RATE:
                s = rng.randrange(len(SUFFIXES[kind]))
                text, source = f"{text} {SUFFIXES[kind][s]}", f"{source} + SUFFIXES[{kind!r}][{s}]"
            out.append({"kind": kind, "source": source, "prompt": upper_first(text)})
    return out


def subject_items(name: str) -> list[tuple[str, dict]]:
    """(source label, format fields) items of the subject tuple called `name`: strings or (a, b) pairs."""
    return [(f"{name}[{i}]", {"a": v[0], "A": upper_first(v[0]), "b": v[1]} if isinstance(v, tuple)
             else {"x": v, "X": upper_first(v)}) for i, v in enumerate(globals()[name])]


def story_combos(rng: random.Random) -> list[tuple[str, dict]]:
    """STORY_COMBOS sampled character + goal + setting premises, as (label, fields) items."""
    grid = list(itertools.product(range(len(STORY_CHARACTERS)), range(len(STORY_GOALS)), range(len(STORY_SETTINGS))))
    return [(f"STORY_CHARACTERS[{c}]+STORY_GOALS[{g}]+STORY_SETTINGS[{s}]",
             {"x": f"{STORY_CHARACTERS[c]} {STORY_GOALS[g]} {STORY_SETTINGS[s]}"})
            for c, g, s in rng.sample(grid, STORY_COMBOS)]


def math_prompts(rng: random.Random) -> list[dict]:
    """MATH_COUNT unique word problems, cycling through MATH_PROBLEMS, each in a random MATH_FRAMES phrasing."""
    out, seen = [], set()
    for i in range(MATH_COUNT * 20):
        if len(out) == MATH_COUNT:
            break
        problem, f = MATH_PROBLEMS[i % len(MATH_PROBLEMS)], rng.randrange(len(MATH_FRAMES))
        text = MATH_FRAMES[f].format(p=problem(rng))
        if text not in seen:
            seen.add(text)
            out.append({"kind": "math", "source": f"generated:math {problem.__name__} (seeded numbers) x "
                        f"MATH_FRAMES[{f}]", "prompt": text})
    return out


def chat_prompts(seed: int = 0) -> list[dict]:
    """General-chat prompts as {"kind": str, "source": str, "prompt": str} dicts, deterministic for a seed."""
    rng = random.Random(seed)
    prompts = [prompt for kind, templates, subjects, per in TEMPLATED
               for prompt in fill(rng, kind, templates, subject_items(subjects), per)]
    prompts += fill(rng, "story", "STORY_TEMPLATES", story_combos(rng), 1) + math_prompts(rng)
    unique = list({p["prompt"]: p for p in prompts}.values())
    rng.shuffle(unique)
    return unique


if __name__ == "__main__":
    from collections import Counter

    result = chat_prompts()
    print(len(result), dict(Counter(p["kind"] for p in result)))
