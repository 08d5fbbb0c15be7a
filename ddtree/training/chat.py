"""General-chat prompts for self-distillation of the drafter: the everyday requests that prompts.py (topic explanations
and coding) lacks. Nine kinds: explain, howto, recipe, summary, advice, compare, list, story and math.

All material here (question subjects, tasks, dishes, situations, pairs, story premises, the summary passages and the
math problem templates) was written by hand for this module; nothing is downloaded or copied. Prompts are templates
filled with subjects, a fraction of them with a kind-specific suffix (audience, length, tone), plus seeded math word
problems. Each prompt records its `source`, naming the template and the tuple entry it came from, so it can be traced
back here. `chat_prompts(seed)` is deterministic: every draw of DRAWS (material added in one go; the committed
prompts file holds each) in turn, each from its own seeded stream, so that new material adds prompts and leaves the
committed ones as they are.
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
    # appended 2026-12-04 (DRAWS[1])
    # nature
    "why rainbows appear after rain", "how volcanoes form", "why earthquakes happen", "how the Moon causes tides",
    "why pine trees stay green all winter", "how mountains are formed", "how stalactites grow in caves",
    "how fossils form", "how the northern lights happen", "why sand dunes move", "how rivers carve canyons",
    "how plants pull water up from their roots", "why flowers have bright colors",
    "why the Moon looks bigger near the horizon",
    # weather
    "how hail forms", "why it's colder on top of a mountain", "how weather forecasters predict rain",
    "why fog forms in the morning", "how a tornado forms", "why snowflakes have six sides",
    "why humidity makes hot days feel worse", "why dew appears on grass overnight",
    # body and health
    "why our knuckles crack", "how the kidneys filter blood", "why we sneeze", "how a broken bone heals",
    "why hair turns gray", "how sunscreen protects your skin", "why your nose runs when it's cold outside",
    "how the heart pumps blood", "why your foot goes numb when you sit on it", "why we blush", "how allergies work",
    "why some people get motion sickness", "how taste buds work", "why bruises change color", "how blood clots",
    "why your stomach growls", "how painkillers know where it hurts", "why we have wisdom teeth",
    "how the body digests a meal",
    # household tech
    "how an induction cooktop heats a pan", "how LED bulbs save energy", "how a vacuum cleaner picks up dirt",
    "how a water heater works", "how a robot vacuum finds its way around", "how a smart speaker understands your voice",
    "how a dehumidifier pulls water out of the air", "how a tumble dryer dries clothes", "how a toilet flushes",
    "why phone batteries wear out over time", "how wireless charging works", "how an inkjet printer puts ink on paper",
    "how a fire extinguisher puts out a fire", "how a thermos keeps drinks hot",
    # money and finance
    "how inflation makes things more expensive", "how credit card companies make money", "how compound interest works",
    "how currency exchange rates are set", "why governments borrow money", "how a central bank sets interest rates",
    "how health insurance premiums are set", "how a bond works", "how contactless card payments work",
    "how a rental security deposit works", "why prices often end in 99 cents", "how cryptocurrency works",
    "how a bank spots a fraudulent transaction",
    # transport
    "how trains stay on the tracks", "how steel ships manage to float", "how a car engine turns fuel into motion",
    "why tires have treads", "how anti-lock brakes work", "how air traffic controllers keep planes apart",
    "how regenerative braking charges an electric car", "how a submarine dives and surfaces", "how a helicopter hovers",
    "why passenger jets fly so high", "how a car's gearbox works", "how high-speed trains go so fast",
    # food science
    "why searing meat makes it taste better", "why bananas ripen faster in a paper bag", "how cheese is made",
    "how yogurt gets its tangy taste", "why mint feels cold in your mouth", "why people rinse rice before cooking",
    "why eggs turn solid when cooked", "how baking soda makes cakes rise", "why honey never spoils",
    "why water boils at a lower temperature in the mountains", "how salt preserves food",
    "why frozen food gets freezer burn", "how chocolate is made from cacao beans",
    "why some cooking oils smoke more than others", "why whipped cream gets fluffy",
    # society and institutions
    "how a bill becomes a law", "how the electoral college works", "how people are picked for jury duty",
    "how a census counts everyone in a country", "why some countries drive on the left",
    "how property taxes pay for schools", "how the United Nations makes decisions",
    "how a patent protects an invention", "how copyright works for songs",
    "how a city gets chosen to host the Olympics",
    # history of everyday things
    "why keyboards use the QWERTY layout", "why a week has seven days", "why we shake hands when we meet",
    "why paper money has any value", "why men's and women's shirts button on different sides",
    "how forks became common at the dinner table", "why school buses are yellow",
    "why houses on one side of the street have odd numbers", "why we clink glasses when making a toast",
    # animals
    "why dogs wag their tails", "how birds know where to migrate", "why zebras have stripes",
    "how bats find their way in the dark", "how chameleons change color", "why owls can turn their heads so far",
    "how fish breathe underwater", "why cows chew their cud", "how spiders spin webs",
    "why cats knock things off tables", "how ants find their way home", "why some animals hibernate",
    "how octopuses squeeze through tiny gaps", "why mosquitoes bite some people more than others",
    # sport
    "how the offside rule works in soccer", "why golf balls have dimples", "how a curveball curves",
    "how tennis scoring works", "why competitive swimmers shave their bodies", "why a marathon is 26.2 miles long",
    "how a cyclist can win the Tour de France without winning a stage",
    # language
    "why English spelling is so inconsistent", "how new words get into the dictionary",
    "why people have different accents", "why some languages are written right to left", "how children learn to talk",
    "why people say bless you after a sneeze", "why sign language differs from country to country",
    # internet
    "how a website loads in your browser", "how search engines rank pages",
    "how streaming video plays without downloading the whole file", "how cloud storage keeps your files safe",
    "why home internet slows down in the evening", "how online ads seem to know what you searched for",
    "how end-to-end encryption keeps messages private", "how a VPN hides your location",
    "how websites store passwords safely", "why emojis look different on different phones",
    "why websites ask if you're a robot",
    # everyday odds and ends
    "how fireworks get their colors", "why mirrors flip left and right but not up and down",
    "why glue doesn't stick to the inside of its bottle", "how plastic is made from oil",
    "how a tattoo stays in the skin", "how polarized sunglasses cut glare", "how astronauts live on the space station",
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
    # appended 2026-12-04 (DRAWS[1])
    "Could you break down {x} for me?", "I've never really understood {x}. Can you help?",
    "Without too much jargon, explain {x}.", "I'm writing a school report. Can you explain {x}?",
    "Do you know {x}? A short answer is fine.", "Can you explain {x}, and mention a common misconception about it?",
    "I'd like to be able to explain {x} to someone else. How would you put it?",
    "Someone brought up {x} at dinner. What's the real explanation?",
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
    # appended 2026-12-04 (DRAWS[1])
    # home repair
    "fix a dripping faucet", "caulk around a bathtub", "fix a sliding door that sticks", "replace a cracked floor tile",
    "install a new showerhead", "tighten a loose doorknob", "replace the battery in a smoke alarm",
    "replace a cabinet hinge", "wallpaper a feature wall", "fix a wobbly table", "mount a TV on the wall",
    "stop a door from slamming",
    # cleaning
    "clean an oven without harsh chemicals", "get limescale off a glass shower screen", "wash a down pillow",
    "clean a mattress", "remove pet hair from a couch", "get a sweat stain out of a white shirt",
    "wash windows without leaving streaks", "clean mold off a shower curtain", "remove candle wax from a tablecloth",
    "get a grease stain off jeans", "clean a washing machine that smells", "dust ceiling fans without making a mess",
    "clean a sticky laptop keyboard", "remove permanent marker from a whiteboard",
    # cooking technique
    "cook rice without it turning mushy", "sear a steak in a pan", "poach an egg", "make a roux for gravy",
    "dice an onion quickly", "caramelize onions", "proof bread dough in a cold kitchen", "make a basic vinaigrette",
    "carve a roast chicken", "season a new wok", "keep pasta from sticking together", "temper chocolate",
    "thicken a sauce that's too thin", "cook dried beans from scratch", "make stock from leftover bones",
    "separate egg yolks from the whites", "fillet a fish", "knead bread dough by hand", "cook crispy bacon in the oven",
    # gardening
    "prune a rose bush", "start tomato seeds indoors", "get rid of aphids on my plants", "plant a young tree",
    "mow a lawn in neat stripes", "grow potatoes in a container", "divide an overgrown perennial",
    "collect rainwater for the garden", "keep slugs away from my lettuce", "propagate a pothos from cuttings",
    "build a raised garden bed",
    # pets
    "get my cat to use a scratching post", "brush my dog's teeth", "stop my dog from pulling on the leash",
    "give a cat a pill", "teach my dog to come when called", "crate train a puppy", "bathe a dog that hates water",
    "help a rescue cat settle in", "take my dog on a long car trip",
    # parenting
    "get my kids to do chores without nagging", "explain money to a young child",
    "set up parental controls on a tablet", "pack a healthy school lunch", "handle a toddler's tantrum in a store",
    "get my child interested in reading", "swaddle a newborn",
    "help my kid with math homework without doing it for them", "teach my child to swim",
    # work and career
    "update my resume after a career break", "write a professional LinkedIn summary", "run an effective team meeting",
    "give constructive feedback to a coworker", "ask a former boss for a reference", "resign from a job on good terms",
    "write a clear project status update", "handle a difficult customer on the phone",
    "set boundaries when working from home", "network at a conference without feeling awkward",
    "delegate tasks to my team",
    # study
    "write a strong essay introduction", "cite sources in APA style", "use flashcards effectively",
    "stay focused during a long study session", "outline a research paper",
    "give a class presentation without reading from my slides",
    # money admin
    "file my taxes for the first time", "dispute a wrong charge on my credit card", "read my pay slip",
    "set up automatic transfers to a savings account", "check my credit report for errors",
    "compare car insurance quotes", "pay off credit card debt faster", "keep receipts organized for tax time",
    "make a simple will",
    # tech and phone
    "free up storage space on my phone", "transfer files from an old laptop to a new one",
    "set up a printer on my home network", "record my computer screen", "block spam calls on my phone",
    "set up a password manager", "set up my phone so I can find it if it gets lost",
    "boost the Wi-Fi signal in a far bedroom",
    "update the software on my smart TV", "recover a deleted file", "set up a video call for my grandparents",
    # travel
    "find cheap flights", "renew my passport", "exchange money before a trip abroad",
    "avoid getting pickpocketed while traveling", "fly with a baby", "rent a car in another country",
    "make the most of a long layover", "plan a holiday on a tight budget",
    "use public transport in a city I don't know", "keep my phone charged on a multi-day hike",
    # sport and fitness
    "improve my squat form", "warm up before a soccer game", "breathe properly while swimming front crawl",
    "choose the right running shoes", "build a home workout routine with no equipment", "improve my balance",
    "hold a plank for longer", "hit a good tennis serve", "shoot a free throw",
    "get back into exercise after an injury", "learn to ice skate as an adult",
    # social situations
    "start a conversation with a stranger at a party", "leave a conversation politely", "reconnect with an old friend",
    "turn down an invitation without hurting anyone's feelings", "write a condolence message",
    "split the bill fairly at a group dinner", "introduce myself to a new team", "set boundaries with a pushy relative",
    "host a game night for friends",
    # crafts
    "knit a scarf as a beginner", "start a watercolor painting", "make a candle at home",
    "frame a poster without paying a framer", "cross-stitch a simple pattern", "hem a pair of trousers",
    "make a scrapbook", "bind a small notebook by hand", "crochet a granny square",
    # cars and bikes
    "check the tread depth on my tires", "replace windshield wiper blades", "adjust the brakes on my bike",
    "set the right height for a bike saddle", "wash my car by hand without scratching it",
    "defrost a car windshield quickly", "change a car headlight bulb", "drive safely in snow",
    "back a trailer into a parking space", "lock my bike so it won't get stolen",
)
HOWTO_TEMPLATES = (
    "How do I {x}?", "What's the best way to {x}?", "Give me step-by-step instructions to {x}.",
    "Can you tell me how to {x}?", "I need to {x}. Where do I start?", "What do I need to {x}, and what are the steps?",
    "Explain how to {x}.", "Never done this before: how do I {x}?", "Is there an easy way to {x}?",
    "What mistakes should I avoid when I try to {x}?", "Walk me through how to {x}.", "Any quick tips to {x}?",
    "I'm planning to {x} this weekend. How should I go about it?", "How long does it take to {x}, and how is it done?",
    # appended 2026-12-04 (DRAWS[1])
    "Can you give me a checklist to {x}?", "I tried to {x} last time and it went badly. What should I do differently?",
    "What's the fastest way to {x} without cutting corners?", "Explain the simplest reliable method to {x}.",
    "What should I know before I {x}?", "My friend says it's hard to {x}. Is it, and how do I do it?",
    "Can you give me some advice on how to {x}?",
    "I've been putting off learning how to {x}. Can you make it sound manageable?",
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
    # appended 2026-12-04 (DRAWS[1])
    "chicken tikka masala", "beef bourguignon", "a Spanish tortilla", "pierogi", "bibimbap", "beef pho", "lamb tagine",
    "jollof rice", "moussaka", "a Cobb salad", "pulled pork sandwiches", "tiramisu", "a lemon meringue pie", "focaccia",
    "palak paneer", "red lentil dal", "chicken satay with peanut sauce", "Thai green curry", "a banh mi sandwich",
    "huevos rancheros", "chicken enchiladas", "beef stroganoff", "Hungarian goulash", "a bowl of shoyu ramen",
    "gnocchi with sage butter", "eggplant parmesan", "chicken cacciatore", "osso buco", "a Victoria sponge cake",
    "sticky toffee pudding", "a baked cheesecake", "fish and chips", "toad in the hole", "bangers and mash",
    "Irish soda bread", "a Moroccan couscous salad", "tabbouleh", "baba ganoush", "fattoush", "chicken shawarma",
    "lamb kofta", "baklava", "a Black Forest cake", "Wiener schnitzel", "beef Wellington", "coq au vin", "crème brûlée",
    "chocolate mousse", "a croque monsieur", "a salade niçoise", "ceviche", "arepas", "beef empanadas",
    "Brazilian cheese bread", "churros", "tres leches cake", "chicken mole", "Mexican street corn", "a Cuban sandwich",
    "jerk chicken", "gumbo", "shrimp and grits", "Southern fried chicken", "New England clam chowder",
    "a Philly cheesesteak", "pecan pie", "key lime pie", "chicken biryani", "masala chai", "a mango lassi",
    "vegetable samosas", "garlic naan", "kimchi stew", "beef bulgogi", "chicken katsu curry", "mapo tofu",
    "kung pao chicken", "Hainanese chicken rice", "beef rendang", "tom yum soup", "mango sticky rice", "chicken adobo",
    "a pavlova", "Anzac biscuits", "an Eton mess", "mulled wine", "eggnog", "a chia seed pudding", "eggs Benedict",
    "a breakfast burrito", "soft pretzels", "a challah loaf", "shortbread", "gingerbread cookies", "peach cobbler",
    "a glazed ham", "chicken pot pie", "a full English breakfast", "arancini", "panna cotta", "a margherita pizza",
    "a tuna melt", "chicken karaage", "Ethiopian doro wat", "peri-peri chicken", "a poke bowl", "spring rolls",
    "a strawberry milkshake", "a matcha latte", "pav bhaji",
)
DISH_TEMPLATES = (
    "Give me a recipe for {x}.", "How do I make {x}?", "What's a simple recipe for {x}?",
    "I want to cook {x} tonight. What do I need?", "Can you give me a beginner-friendly recipe for {x}?",
    "How do I make {x} from scratch?", "What ingredients go into {x}?", "Write a recipe for {x} that serves four.",
    "What's the secret to making {x} really well?", "My family loves {x}. Can you share an easy version?",
    "Can you suggest a healthier way to make {x}?", "I've never cooked before. How do I make {x}?",
    "What's a quick weeknight version of {x}?", "Recipe for {x}, please, with step-by-step instructions.",
    # appended 2026-12-04 (DRAWS[1])
    "What's the traditional way to make {x}?", "I'd like to try making {x} this weekend. Can you walk me through it?",
    "How can I make {x} ahead of time for a party?", "What equipment do I need to make {x} at home?",
    "Can you write a shopping list and method for {x}?", "What common mistakes should I avoid when making {x}?",
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
    # appended 2026-12-04 (DRAWS[1])
    "ground turkey, zucchini and rice", "canned chickpeas, spinach and coconut milk", "bacon, potatoes and onions",
    "pork chops, apples and mustard", "frozen shrimp, lemon and spaghetti", "halloumi, peppers and couscous",
    "leftover mashed potatoes, ham and cheddar", "tortillas, black beans and salsa", "ground lamb, eggplant and yogurt",
    "quinoa, roasted peppers and goat cheese", "cod fillets, potatoes and parsley", "beets, oranges and walnuts",
    "a whole chicken, lemons and rosemary", "chorizo, chickpeas and kale", "ramen noodles, eggs and spring onions",
    "ripe pears, ginger and puff pastry", "cottage cheese, spinach and lasagna sheets",
    "coconut milk, red curry paste and chicken breasts", "Brussels sprouts, bacon and maple syrup",
    "firm tofu, mushrooms and miso paste", "frozen peas, mint and ricotta", "sausages, lentils and red wine",
    "pita bread, cucumbers and feta", "bulgur, tomatoes and parsley", "leftover rice, milk and raisins",
    "pumpkin, sage and butter", "canned corn, potatoes and milk", "dark chocolate, eggs and butter",
    "smoked salmon, cream cheese and bagels", "barley, mushrooms and onions", "chicken wings, hot sauce and celery",
    "polenta, tomatoes and parmesan", "green beans, almonds and garlic", "steak, potatoes and mushrooms",
    "egg noodles, ground pork and cabbage", "watermelon, feta and mint",
    "cream cheese, strawberries and graham crackers", "avocados, eggs and sourdough bread", "sardines, pasta and lemon",
    "butternut squash, farro and cranberries",
)
PANTRY_TEMPLATES = (
    "I have {x}. What can I cook?", "What can I make for dinner with {x}?", "Suggest a recipe that uses {x}.",
    "All I have left is {x}. Any ideas for a meal?", "Give me two quick recipes using {x}.",
    "What's something tasty I can make from {x}?",
    # appended 2026-12-04 (DRAWS[1])
    "My fridge has {x}. What could I make tonight?", "Using only {x} plus basic spices, what can I cook?",
    "I need a meal idea with {x}. What do you suggest?", "Can you come up with a dinner that uses up {x}?",
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
    # appended 2026-12-04 (DRAWS[1])
    "The Great Wall of China is not a single wall but a long series of walls, towers and forts built and rebuilt "
    "over many centuries. Early sections were made of packed earth, while most of the famous stone and brick parts "
    "date from the Ming dynasty, which ruled from 1368 to 1644. The walls helped defend northern China against "
    "raids and control trade along the frontier. Despite a popular claim, the wall cannot be seen from the Moon "
    "with the naked eye.",
    "Photosynthesis is the process plants use to make their own food. Inside their leaves, a green pigment called "
    "chlorophyll captures energy from sunlight. The plant uses that energy to combine water from its roots with "
    "carbon dioxide from the air, producing sugar and releasing oxygen. The sugar fuels the plant's growth, and the "
    "oxygen supports most animal life. Algae and some bacteria photosynthesize too, and together they produce a "
    "large share of the oxygen in the atmosphere.",
    "The Panama Canal crosses the narrow Isthmus of Panama and links the Atlantic and Pacific oceans. A French "
    "attempt to build it in the 1880s failed, largely because of disease and engineering problems. The United "
    "States took over the project and opened the canal in 1914. Ships are raised and lowered by a system of locks, "
    "passing through the large artificial Gatun Lake on the way. Control of the canal was handed to Panama at the "
    "end of 1999.",
    "Hummingbirds are small birds found only in the Americas. They beat their wings dozens of times per second, "
    "which lets them hover in front of flowers and even fly backwards. To power this, they have an extremely fast "
    "metabolism and must feed on nectar many times a day. On cold nights some species save energy by entering a "
    "state called torpor, in which their body temperature drops sharply. The bee hummingbird of Cuba is the "
    "smallest bird in the world.",
    "Mount Everest, on the border between Nepal and the Tibet region of China, is the highest mountain above sea "
    "level. A survey announced in 2020 put its height at 8,849 meters. In Nepal it is called Sagarmatha, and in "
    "Tibet, Chomolungma. The first confirmed ascent was made on May 29, 1953, by Edmund Hillary of New Zealand and "
    "Tenzing Norgay, a Sherpa climber. Today hundreds of people attempt the climb each year, though thin air and "
    "harsh weather make it dangerous.",
    "Ocean tides are caused mainly by the Moon's gravity pulling on Earth's oceans, with a smaller effect from the "
    "Sun. Most coastlines see two high tides and two low tides roughly every day. When the Sun and Moon line up, "
    "around the new and full moon, the tides are stronger and are called spring tides. When they pull at right "
    "angles, the weaker tides are called neap tides. The Bay of Fundy in Canada has some of the highest tides on "
    "Earth.",
    "The Amazon River flows across South America from the Andes to the Atlantic Ocean. It carries more water than "
    "any other river, roughly a fifth of all the fresh water that rivers pour into the oceans. Around it lies the "
    "Amazon rainforest, the largest tropical rainforest in the world, which spreads across several countries, with the "
    "biggest part in Brazil. The forest is home to an enormous variety of plants and animals, many of them still "
    "undescribed by scientists.",
    "Emperor penguins are the largest of all penguins and breed during the harsh Antarctic winter. After the "
    "female lays a single egg, she passes it to the male and returns to the sea to feed. The male balances the egg "
    "on his feet under a warm fold of skin for about two months, eating nothing the whole time. Males huddle "
    "together in large groups and take turns on the cold outer edge. When the chick hatches, the female returns to "
    "help feed it.",
    "In the year 79 CE, Mount Vesuvius erupted near the Bay of Naples and buried the Roman town of Pompeii under "
    "thick layers of ash and pumice. The nearby town of Herculaneum was also destroyed. A young writer, Pliny the "
    "Younger, described the eruption in letters he wrote years later. Systematic excavations began in the "
    "eighteenth century. Because the ash preserved streets, houses, paintings and even loaves of bread, Pompeii "
    "offers a rare picture of everyday Roman life.",
    "The Dead Sea is a salt lake bordered by Jordan to the east and by Israel and the West Bank to the west. Its "
    "shores are the lowest land on Earth, more than 400 meters below sea level. The water is almost ten times "
    "saltier than the ocean, so swimmers float with hardly any effort, but fish cannot live in it. The lake has "
    "been shrinking for decades, mainly because much of the water from the Jordan River is now used before it "
    "arrives.",
    "Elephants are the largest land animals alive today. There are three species: the African savanna elephant, "
    "the African forest elephant and the Asian elephant. An elephant's trunk is a combined nose and upper lip with "
    "tens of thousands of muscles, strong enough to lift logs and precise enough to pick up a single peanut. "
    "Elephant families are usually led by the oldest female, called the matriarch. They communicate with deep "
    "rumbles, some too low for humans to hear.",
    "In June 1215, King John of England met a group of rebellious barons at Runnymede, near the River Thames, and "
    "agreed to a charter later known as Magna Carta. It promised that the king, too, had to follow the law, and it "
    "protected free men from unlawful imprisonment. The pope cancelled the agreement within weeks, and civil "
    "war followed. However, the charter was reissued several times, and its ideas influenced later thinking about "
    "rights and limited government.",
    "The first bicycle-like machine was built by Karl Drais in Germany in 1817. It had two wheels but no pedals; "
    "riders pushed themselves along with their feet. In the 1860s pedals were attached to the front wheel, and "
    "later the high-wheeled penny-farthing became fashionable despite being hard to mount. In the 1880s the safety "
    "bicycle appeared, with two wheels of similar size and a chain driving the back wheel. Air-filled tires soon "
    "made riding far more comfortable.",
    "A bolt of lightning heats the air around it to roughly 30,000 degrees Celsius, several times hotter than the "
    "surface of the Sun. The air expands so suddenly that it creates a shock wave, which we hear as thunder. Light "
    "reaches us almost instantly, but sound travels about one kilometer every three seconds. Counting the seconds "
    "between the flash and the thunder gives a rough idea of how far away the storm is. If you can hear thunder, "
    "it's time to go indoors.",
    "The RMS Titanic left Southampton on its first voyage in April 1912, bound for New York. Late on the night of "
    "April 14, it struck an iceberg in the North Atlantic and sank less than three hours later. More than 1,500 of "
    "the roughly 2,200 people on board died, partly because there were lifeboats for only about half of them. The "
    "disaster led to new international safety rules, including enough lifeboat places for everyone and a radio "
    "watch kept day and night.",
    "Bamboo may look like a tree, but it is actually a kind of grass. Some species are among the fastest-growing "
    "plants on Earth and can grow more than half a meter in a single day. Because it is strong, light and "
    "flexible, bamboo is used for scaffolding, furniture, flooring and even bicycles. Giant pandas eat almost "
    "nothing else. Many bamboo species flower only once every few decades, and all the plants of a species often "
    "flower at the same time.",
    "Chocolate comes from the seeds of the cacao tree, which is native to Central and South America. The Olmec, "
    "Maya and Aztec peoples ground the roasted beans to make a bitter drink, sometimes flavored with chili, and the "
    "Aztecs even used cacao beans as money. Spanish explorers brought cacao to Europe in the sixteenth century, "
    "where people sweetened it with sugar. Solid eating chocolate came much later, in the nineteenth century, after "
    "new machines made it possible.",
    "The Eiffel Tower was built for the 1889 World's Fair in Paris, held to mark one hundred years since the French "
    "Revolution. It was designed and built by the company of the engineer Gustave Eiffel. At about 300 meters, it "
    "was the tallest structure made by humans until 1930. Many artists at the time called it ugly, and it was meant "
    "to stand for only twenty years. It was saved partly because it proved useful as a radio antenna.",
    "In the 1840s, the Hungarian doctor Ignaz Semmelweis worked in a maternity hospital in Vienna. He noticed that "
    "women cared for by doctors died of fever far more often than those cared for by midwives. The doctors often "
    "came straight from examining dead bodies. When Semmelweis made them wash their hands in a chlorine solution, "
    "deaths fell sharply. Many colleagues rejected his idea, and only after later work on germs by Louis Pasteur and "
    "Joseph Lister was he proven right.",
    "The ancient Olympic Games were held at Olympia in Greece, traditionally starting in 776 BCE, as part of a "
    "festival honoring Zeus. They took place every four years, and for a long time the main event was a short "
    "footrace. The games continued for more than a thousand years before ending in the late fourth century CE. "
    "Inspired by that history, the French educator Pierre de Coubertin helped revive them, and the first modern "
    "Olympics were held in Athens in 1896.",
    "Pacific salmon hatch in freshwater streams and spend their first months there before swimming out to sea. "
    "After a few years in the ocean, they return to the very stream where they were born, sometimes traveling "
    "hundreds of kilometers upstream and leaping up waterfalls. Scientists think they find their home river largely "
    "by smell. Most Pacific salmon die soon after spawning, and their bodies provide nutrients for the streams, "
    "bears and even the surrounding forests.",
    "Bats are the only mammals capable of true flight. There are more than 1,400 species, living on every continent "
    "except Antarctica. Many bats hunt at night using echolocation: they make high-pitched calls and listen for "
    "the echoes to locate insects and obstacles. A single bat can eat a large number of insects in one night. "
    "Other species feed on fruit or nectar, and in doing so they pollinate plants and spread seeds across wide "
    "areas.",
    "The Great Barrier Reef lies off the coast of Queensland in northeastern Australia. Stretching for more than "
    "2,000 kilometers, it is the largest coral reef system in the world and is made up of thousands of individual "
    "reefs and hundreds of islands. The reef was built over thousands of years by tiny animals called coral "
    "polyps. When the water becomes too warm, corals can lose the algae that live in them and turn white, a process "
    "called bleaching.",
    "Louis Braille was born in France in 1809 and lost his sight after an accident in his father's workshop when he "
    "was three. As a student at a school for blind children in Paris, he learned about a military code of raised "
    "dots designed for reading in the dark. He simplified it into a system in which each letter is a small cell of "
    "up to six raised dots. He published it in 1829, and braille is now used around the world.",
    "Crews will replace an aging water main under Maple Avenue between 3rd and 6th Street starting Monday. The work "
    "is expected to take about three weeks. During that time, the road will be limited to one lane, and street "
    "parking will not be allowed on the north side. Some homes may have their water shut off for a few hours; "
    "affected residents will receive a notice at least two days in advance. The city apologizes for the "
    "inconvenience.",
    "The Saturday farmers market is moving from the old bus depot to Harbor Park starting May 4. The new location "
    "has more shade, public restrooms and room for forty stalls instead of twenty-five. Opening hours stay the "
    "same, from 8 a.m. to 1 p.m. Free parking will be available at the school across the road. Market organizers "
    "say several new vendors will join this season, including a cheese maker and a stand selling fresh flowers.",
    "Lost: a small brown and white terrier named Biscuit, last seen on Sunday evening near Willow Pond. He is "
    "wearing a red collar with a bell but may have lost his tag. Biscuit is friendly but nervous around strangers, "
    "so please don't chase him. If you see him, call or text the number below at any time, day or night. A reward "
    "is offered for his safe return. His family, especially two very worried children, misses him a lot.",
    "After eight months of renovation, the Eastside Swimming Pool will reopen to the public on June 1. The pool now "
    "has a new heating system, an accessible ramp into the water and a separate shallow area for young children. "
    "The changing rooms have also been rebuilt. To celebrate, entry will be free for everyone during the opening "
    "weekend. Swimming lessons for children and adults start the following week, and places can be booked at the "
    "front desk.",
    "Several roads in the town center will close on Sunday morning for the annual Harbor Fun Run. The 5-kilometer "
    "route starts at the town hall at 9 a.m. and follows the seafront before looping back through Castle Street. "
    "Roads will reopen by noon. Bus routes 4 and 7 will be diverted during the race. Organizers expect about "
    "eight hundred runners, and money raised this year will go to the children's ward at the local hospital.",
    "Dear residents, the elevator in Building B will be out of service from Tuesday to Thursday next week while "
    "technicians replace its control panel. We understand this is difficult, especially for those on upper floors. "
    "If you need help carrying groceries or heavy items during this time, please contact the building office, and "
    "our staff will arrange assistance. Deliveries can be left at the front desk. Thank you for your patience. "
    "Building Management.",
    "Sixty students from five schools showed their work at the county science fair on Friday. First prize went to "
    "fourteen-year-old Priya Nair, who built a low-cost sensor that warns farmers when soil is getting too dry. "
    "Second place went to a team that tested which local pond plants clean water most effectively. Judges praised "
    "the students' careful records and clear posters. The top three projects will go on to the state competition "
    "in April.",
    "After forty-two years, Hartley's Bakery on Mill Road will close its doors at the end of the month. Owners "
    "George and Ellen Hartley, who opened the shop in their twenties, say it is finally time to retire. Generations "
    "of local families bought birthday cakes and Sunday rolls there. The couple plans to share some of their "
    "favorite recipes in a small booklet, with profits going to the town's food bank. A farewell tea party is "
    "planned for the last Saturday.",
    "The Lakeside Community Choir is looking for new members of all ages and abilities. No audition is needed, and "
    "you don't have to read music. Rehearsals are held every Wednesday from 7 to 9 p.m. in the hall of St. Anne's "
    "Church, with tea and biscuits at the break. This season the choir is preparing a winter concert of folk songs "
    "and film music. Come along to any rehearsal to try it out for free.",
    "Hi everyone, starting on the first of next month we will switch to a new system for expense claims. Instead "
    "of filling in paper forms, you will photograph your receipts and submit them through the company app. Claims "
    "will be approved by your manager within five working days and paid with your next salary. A short training "
    "video is available on the intranet. Paper forms will no longer be accepted after the end of this month. "
    "Thanks, Finance.",
    "A friendly reminder from the facilities team: the office kitchen fridge will be emptied this Friday at 4 p.m. "
    "Anything left inside, including labeled containers, will be thrown away or washed. Please take home what you "
    "want to keep before then. We would also like to remind everyone to write their name and date on food they "
    "store. Last month we found a yogurt that had expired in the spring. Let's keep the kitchen pleasant for "
    "everyone.",
    "Please note that we will hold a fire drill on Wednesday morning between 10 and 11 a.m. When the alarm sounds, "
    "leave the building by the nearest stairway, not the elevators, and go to the assembly point in the east car "
    "park. Floor wardens in yellow vests will check that every area is empty. Visitors should be accompanied by the "
    "person they are meeting. The drill should take about fifteen minutes. Thank you for your cooperation.",
    "From Monday, the main staff parking lot will be closed for two weeks while it is resurfaced and repainted. "
    "During this time, staff can park at the Riverside garage, where we have reserved 150 spaces. Show your "
    "employee badge at the gate to enter for free. A shuttle bus will run between the garage and the main entrance "
    "every ten minutes from 7 to 10 a.m. and 4 to 7 p.m. Cyclists can still use the covered bike shelter as usual.",
    "Team, please join me in welcoming Aisha Khan, who starts on Monday as our new data analyst. Aisha joins us "
    "from a logistics company, where she spent four years building sales forecasts. She will sit with the "
    "planning team on the second floor and will be working mostly on the quarterly reports. In her spare time she "
    "enjoys rock climbing and baking bread. Please stop by and say hello, and help her find her way around.",
    "Hydra Labs today announced the FlowCap, a reusable water bottle with a lid that tracks how much you drink. A "
    "small sensor in the cap counts each sip and sends the total to a phone app, which can remind you gently if "
    "you fall behind your daily goal. The bottle is made of stainless steel, keeps drinks cold for twenty-four "
    "hours and is dishwasher safe once the cap is removed. It goes on sale next month in three colors.",
    "Pagewise has introduced the Pagewise Lite, a lighter and cheaper version of its e-reader. The new model weighs "
    "just 160 grams, has a six-inch glare-free screen and adjustable warm lighting for reading in the evening. The "
    "company says the battery lasts up to six weeks on a single charge. It is also waterproof, so it can be used "
    "at the beach or in the bath. Unlike the premium model, it has no physical page-turn buttons.",
    "The makers of the budgeting app Penny have released a major update. Users can now set shared goals with a "
    "partner or roommate, such as saving for a holiday or splitting rent, and see each other's progress. The app "
    "also sorts spending into categories automatically and sends a short weekly summary every Sunday. The basic "
    "version remains free, while a paid plan adds unlimited accounts and detailed reports. The update is available "
    "on all major phones.",
    "Stride Outdoor has launched the Ridgeline, a trail running shoe designed for rocky and muddy paths. The shoe "
    "has a deep-grip sole, a toe cap to protect against stones and a waterproof upper that still lets feet "
    "breathe. At 280 grams per shoe, it is lighter than the company's previous trail model. Stride says the sole "
    "is made partly from recycled rubber. The Ridgeline comes in men's and women's sizes and will be in stores "
    "from April.",
    "For thirty years, Agnes had kept the lighthouse on Gull Rock, and for thirty years no ship had been wrecked "
    "there. When the harbor office wrote to say the light would be replaced by an automatic lamp, she packed her "
    "things without complaint. On her last night a storm cut the power to the new system. Agnes climbed the stairs "
    "one more time, lit the old oil lamp by hand and kept it burning until a fishing boat reached the harbor safely.",
    "Every afternoon, Mr. Okafor played chess alone on a bench in the park, moving pieces for both sides. One day a "
    "boy of about ten sat down across from him and asked to play. He lost the first game in twelve moves and the "
    "second in fifteen. He came back the next day, and the day after that. By the end of summer the boy had won his "
    "first game, and Mr. Okafor had bought a second board.",
    "June found the umbrella in the lost property box at the train station, bright yellow and oddly warm to the "
    "touch. The first time she opened it, the rain stopped falling only on her. The second time, it lifted her a "
    "few centimeters off the ground. By the third time, she understood that the umbrella was looking for someone. "
    "It pulled her across town to an old woman waiting at a bus stop, who smiled and said she'd lost it in 1962.",
    "Theo built a time machine in his garage and set it for exactly five minutes into the past. He had missed the "
    "school bus that morning and wanted one more chance. The machine rattled, flashed and sent him back as "
    "planned, but it dropped him on the roof of the garage instead. By the time he climbed down, the bus had gone "
    "again. He decided that his next invention would be a faster bicycle.",
    "The clockmaker's shop had been closed for years when Nell found the door unlocked. Inside, dozens of clocks "
    "were ticking, all perfectly on time. On the workbench lay a note in her grandfather's handwriting: \"If you are "
    "reading this, the clocks have waited long enough.\" Beneath it was a small silver key. Nell wound the biggest "
    "clock on the wall, and for the first time in years, every clock in the shop chimed together.",
    "Dear Kenji, thank you for your last letter and the photo of your school festival. Your class's paper dragon "
    "looked amazing! Here in Lisbon it's getting warmer, and we have started going to the beach on weekends. I "
    "joined the school's photography club and I'm learning to take pictures of birds, which is harder than it "
    "sounds because they never stay still. I'm sending you a postcard of the old tram. Write soon! Your friend, "
    "Ines.",
    "Dear Mrs. Alvarez, thank you so much for watering my plants and collecting my mail while I was away. "
    "Everything was in perfect shape when I got back, and the tomatoes on the balcony have never looked so happy. "
    "I brought you a small jar of honey from the village where I stayed; I'll drop it off tomorrow. If you ever "
    "go away yourself, I'd be glad to return the favor. With warm thanks, Peter from number 12.",
    "Dear Mr. Bennett, I'm writing to let you know that my daughter Lily was absent from school on Monday and "
    "Tuesday because she had a bad cold and a fever. She is feeling much better now and will be back tomorrow. "
    "Could you please let us know what homework she missed, especially in math, so she can catch up? Thank you "
    "for your understanding, and please contact me if you have any questions. Kind regards, Sarah Lin.",
    "Hi Marta, big news: I got the job in Edinburgh! I start at the museum on the first of September, working on "
    "their new children's gallery. I'm excited but also a little nervous about moving so far from everyone. I've "
    "found a small flat near the old town with a view of the castle if I lean out of the window. You have to come "
    "and visit once I'm settled. I'll miss our Thursday walks. Love, Hannah.",
    "I stayed at the Seaview Hotel for three nights last month. The location is excellent, right on the "
    "waterfront and a short walk from the old town, and the staff were welcoming and helpful. The breakfast "
    "offered fresh fruit, good coffee and warm pastries. However, my room was smaller than the photos suggested, "
    "and the walls were thin enough to hear the neighbors' television. It's a fair choice for a short stay, but "
    "ask for a room on a higher floor.",
    "The Orchard Keeper's Daughter, the second novel by the fictional author Clara Voss, follows a young woman who "
    "returns to her family's failing apple farm after her father's death. The writing is quiet and beautiful, and "
    "the descriptions of the changing seasons are a real pleasure. The middle section drags, with too many "
    "flashbacks, but the final chapters are moving and honest. It's a slow book, best read on long autumn "
    "evenings rather than on a busy commute.",
    "Our town should plant far more trees along its streets. Trees give shade on hot summer days, which can make "
    "sidewalks several degrees cooler and lower the cost of cooling buildings. They soak up rainwater, reducing "
    "flooding, and they give birds and insects a place to live. Studies also suggest that people walk more on "
    "leafy streets. Yes, trees cost money to plant and maintain, but few public investments give back so much for "
    "so long.",
    "Rosa's Kitchen, the new family-run restaurant on Bridge Street, is worth a visit. The menu is short, which is "
    "usually a good sign, and everything we tried tasted fresh. The slow-cooked lamb was tender and full of "
    "flavor, and the lemon tart was the best I've had in years. Service was friendly but slow on a busy Friday "
    "night, so don't come in a hurry. Prices are reasonable, and booking ahead is a good idea.",
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
    # appended 2026-12-04 (DRAWS[1])
    "Summarize this in one short paragraph:\n\n{x}", "{x}\n\nGive me the gist of this in a sentence or two.",
    "Can you boil this down to its main points?\n\n{x}", "Here is a passage:\n\n{x}\n\nWrite a brief summary of it.",
    "{x}\n\nWhat's the short version?", "Summarize the text below for someone in a hurry.\n\n{x}",
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
    # appended 2026-12-04 (DRAWS[1])
    "my boss sends me messages late at night and expects quick replies",
    "I've been asked to lead a meeting for the first time", "a colleague keeps interrupting me in meetings",
    "I made a costly mistake on a project and need to tell my team",
    "I'm the only remote person on an office-based team", "I want to ask for a raise but my company had a bad year",
    "my workload doubled after a coworker quit", "I've been offered a job at a competitor",
    "I want to quit my job but don't have another one lined up",
    "my manager's feedback is so vague that I never know where I stand", "I have to let someone on my team go",
    "I keep getting passed over for promotions", "a client keeps asking for extra work without paying for it",
    "I'm returning to work after a year of parental leave", "I have to write a self-assessment for my annual review",
    "I want to take a sabbatical to travel", "I volunteered to organize the office holiday party",
    "my credit card debt keeps growing", "I just got my first real paycheck and don't know how to budget it",
    "my partner and I have very different spending habits", "I want to start investing but I'm afraid of losing money",
    "I owe my parents money and feel awkward about it", "I got an unexpectedly large tax bill",
    "I want to save for a house deposit in three years", "my friends keep inviting me on trips I can't afford",
    "I keep impulse shopping online", "I received a small inheritance and don't know what to do with it",
    "my car needs an expensive repair and I'm low on savings",
    "my partner wants to move to another country and I don't", "I think a close friend is drifting away from me",
    "I'm in a new relationship and don't know when to introduce them to my family",
    "my friend keeps canceling plans at the last minute", "I said something hurtful to my partner during an argument",
    "my best friend is dating someone I don't trust", "I'm going on a first date this weekend",
    "I want to end a friendship that no longer feels healthy",
    "my partner and I can't agree on where to spend the holidays",
    "I keep comparing my relationship to my friends' relationships",
    "a friend asked me to be a bridesmaid and I can't afford it", "I'm the only single person in my friend group",
    "my brother keeps asking to borrow money", "my mom calls me several times a day",
    "my two kids fight over everything", "my teenager wants to quit the soccer team halfway through the season",
    "my parents are getting divorced after thirty years", "my in-laws keep giving us unwanted parenting advice",
    "I'm caring for an aging parent while working full time",
    "my adult son moved back home and doesn't help around the house",
    "my daughter is starting kindergarten and is scared", "my family thinks being a musician isn't a real career",
    "my stepchildren don't seem to like me", "I'm planning a family reunion and everyone wants something different",
    "I drink far too much coffee every day", "I sit at a desk all day and my back hurts",
    "I want to drink less alcohol on weekends", "I skip breakfast and then snack all afternoon",
    "I want to get back into exercise after a knee injury", "I forget to drink enough water",
    "I get headaches after long days on the computer", "I want to quit smoking",
    "I joined a gym but feel intimidated there", "I eat too fast at every meal", "I can't focus when I study at home",
    "I'm failing a class I need to graduate", "I chose the wrong major and want to switch",
    "I have to write a research paper and don't know how to start",
    "I'm teaching myself to code and keep getting stuck", "I keep falling behind in my online course",
    "I'm applying for scholarships for the first time", "I want to take a gap year before university",
    "my professor rejected my thesis proposal", "I can't take notes fast enough in lectures",
    "I'm moving house next month and haven't started packing", "I'm moving back in with my parents to save money",
    "I'm looking for a roommate through online ads", "my new apartment is much smaller than my old one",
    "my landlord wants to raise the rent by twenty percent", "I'm moving across the country with two cats",
    "my old landlord won't return my security deposit", "my neighbor keeps parking in front of my driveway",
    "my neighbors' tree drops leaves all over my garden",
    "my neighbor smokes on the balcony and the smoke drifts into my flat",
    "a neighbor keeps complaining about my kids playing outside", "someone in my building keeps taking my packages",
    "my dog is terrified of thunderstorms", "my cat has started peeing outside the litter box",
    "I'm going on vacation and have nobody to look after my dog", "my new puppy chews everything",
    "my older dog doesn't get along with our new kitten", "my rabbit seems bored in its hutch",
    "my dog barks at everyone who walks past the window", "I want to start painting but feel I have no talent",
    "I bought a good camera but only ever shoot on auto mode", "my chess rating hasn't improved in months",
    "I'd like to join a choir but I'm nervous about the audition", "I want to grow food but only have a small balcony",
    "my knitting always comes out too tight", "I want to start a podcast with a friend",
    "I've lost interest in a hobby I used to love", "I want to try rock climbing but I'm afraid of heights",
    "my laptop fan is loud all the time", "I think my email account has been hacked",
    "I have thousands of unsorted photos on my phone", "my home Wi-Fi keeps dropping out in the evenings",
    "my parents keep falling for scam phone calls", "my phone storage is always full",
    "I accidentally deleted an important work file", "my printer refuses to connect to my laptop",
    "I'm taking a toddler on a ten-hour flight", "my flight was cancelled and I'm stuck at the airport",
    "I lost my passport a week before a trip", "I'm planning my first camping trip",
    "I want to travel more but only get two weeks off a year",
    "I'm going on a business trip to a country with very different customs",
    "I'm going on a road trip with friends I've never traveled with", "I get carsick on long drives",
    "I freeze up whenever I have to speak in meetings", "I feel like a fraud at my new job",
    "I'm self-conscious about my accent", "I find it hard to accept compliments",
    "I apologize all the time, even when it isn't my fault", "I'm nervous about going to a party alone",
    "I get tongue-tied around people I admire", "I hate hearing my own voice in recordings",
    "I get defensive when people criticize my work", "I take forever to make even small decisions",
    "I'm getting married next year and the planning is overwhelming", "I want to learn to swim as an adult",
    "someone scratched my car in a parking lot and drove off", "I'm turning thirty and feel behind in life",
)
ADVICE_TEMPLATES = (
    "{X}. Any advice?", "{X}. What should I do?", "I need some advice: {x}.", "{X}. How should I handle this?",
    "Can you help? {X}.", "{X}. What would you suggest?", "What would you do in my place? {X}.",
    "{X}. Where do I even start?", "Honest advice, please: {x}.", "{X}. Give me three practical tips.",
    "{X}. What are my options?", "My situation: {x}. What's a good first step?", "{X}, and I'm not sure what to do.",
    "{X}. How do other people deal with this?", "Looking for tips: {x}.",
    # appended 2026-12-04 (DRAWS[1])
    "Here's my problem: {x}. How would you approach it?", "{X}. How can I make this easier on myself?",
    "I'd appreciate your perspective. {X}.", "{X}. What should I keep in mind?",
    "Could you give me some guidance? {X}.", "{X}. What mistakes should I avoid?",
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
    # appended 2026-12-04 (DRAWS[1])
    ("a standing desk", "a regular desk"), ("a gaming chair", "an office chair"), ("a hatchback", "an SUV"),
    ("a used car", "a new car"), ("a motorcycle", "a scooter for commuting"), ("an e-bike", "a regular bike"),
    ("a cordless drill", "a corded drill"), ("a gas grill", "a charcoal grill"), ("a slow cooker", "a pressure cooker"),
    ("a stand mixer", "a hand mixer"), ("an espresso machine", "a pod coffee machine"), ("green tea", "black tea"),
    ("oat milk", "almond milk"), ("whole wheat pasta", "regular pasta"), ("intermittent fasting", "calorie counting"),
    ("a personal trainer", "group fitness classes"), ("cycling", "running to build endurance"),
    ("a rowing machine", "an exercise bike"), ("kettlebells", "dumbbells"), ("skiing", "snowboarding"),
    ("a kayak", "a stand-up paddleboard"), ("a Roth IRA", "a traditional IRA"),
    ("paying off debt", "building an emergency fund first"), ("individual stocks", "ETFs"),
    ("a financial advisor", "managing my own investments"), ("term life insurance", "whole life insurance"),
    ("an apartment near work", "a bigger place in the suburbs"), ("a studio apartment", "a shared flat"),
    ("solar panels", "a green energy tariff"), ("a smart thermostat", "a programmable thermostat"),
    ("a mirrorless camera", "a DSLR"), ("a PlayStation", "an Xbox"), ("a Chromebook", "a Windows laptop for school"),
    ("a password manager", "my browser's built-in password saving"),
    ("cloud storage", "an external hard drive for backups"), ("Python", "JavaScript as a first programming language"),
    ("a coding bootcamp", "a computer science degree"), ("an online degree", "an in-person degree"),
    ("community college", "a four-year university to start with"), ("a gap year", "going straight to university"),
    ("a language app", "an evening language class"), ("a private tutor", "self-study"),
    ("a master's degree", "more work experience"), ("a big party", "a quiet dinner for my birthday"),
    ("camping", "glamping"), ("an all-inclusive resort", "booking everything separately"),
    ("traveling in peak season", "traveling in the off-season"), ("a guided tour", "exploring on my own"),
    ("a window seat", "an aisle seat"), ("carry-on only", "checking a bag"), ("dry dog food", "wet dog food"),
    ("a lawn", "a wildflower meadow in the garden"), ("raised beds", "planting straight into the ground"),
    ("a push mower", "a robot mower"), ("tile", "carpet for a bedroom"), ("blinds", "curtains"),
    ("a walk-in shower", "a bathtub in a small bathroom"), ("an electric razor", "a safety razor"),
    ("a down jacket", "a synthetic insulated jacket"), ("a Dutch oven", "a stockpot"),
    ("a gas fireplace", "a wood-burning stove"), ("a newspaper subscription", "free news sites"),
    ("borrowing books from the library", "buying my own"), ("cable TV", "streaming services"),
    ("a minivan", "a three-row SUV for a big family"), ("homeschooling", "a traditional school"),
    ("daycare", "a nanny"), ("cloth diapers", "disposable diapers"), ("public transport", "owning a car in the city"),
    ("a walking holiday", "a cycling holiday"), ("a team sport", "an individual sport for a shy kid"),
    ("ballet", "hip-hop classes for my daughter"), ("a fountain pen", "a ballpoint pen"),
    ("a film camera", "a digital camera"), ("acrylics", "watercolors for a beginner painter"),
    ("an acoustic guitar", "an electric guitar"), ("a ukulele", "a guitar for an adult beginner"),
    ("board games", "video games for family night"), ("a chess club", "playing chess online"),
    ("the Pomodoro technique", "time blocking"), ("a four-day week with longer hours", "a regular five-day week"),
    ("a gift card", "a wrapped present"), ("a mortgage broker", "going straight to a bank"),
    ("a real estate agent", "selling my house myself"), ("a tankless water heater", "a tank water heater"),
    ("winter tires", "all-season tires"), ("a manual transmission", "an automatic"),
    ("an online therapist", "an in-person therapist"), ("morning workouts", "evening workouts"),
    ("walking", "jogging for general health"),
)
CHOICE_TEMPLATES = (
    "{A} or {b}: which is better?", "Should I choose {a} or {b}?", "Compare {a} and {b} in a short table.",
    "What are the pros and cons of {a} versus {b}?", "I can't decide between {a} and {b}. Help me choose.",
    "Is {a} really better than {b}?", "{A} vs. {b}: what should I consider?",
    "Which makes more sense for me, {a} or {b}? Ask me a few questions first if you need to.",
    "In what situations would you pick {a} over {b}?", "Give me a quick comparison of {a} and {b}.",
    "Help me weigh {a} against {b}.", "What would you recommend for a beginner: {a} or {b}?",
    # appended 2026-12-04 (DRAWS[1])
    "What are the main trade-offs between {a} and {b}?", "I'm torn between {a} and {b}. What would you pick and why?",
    "{A} or {b}? Give me your honest recommendation.", "Who is {a} best for, and who should go with {b}?",
    "Which would you go for, {a} or {b}, and what would change your mind?",
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
    # appended 2026-12-04 (DRAWS[1])
    ("a bee", "a wasp"), ("a raven", "a crow"), ("a leopard", "a cheetah"), ("a llama", "an alpaca"),
    ("a mushroom", "a toadstool"), ("a shrimp", "a prawn"), ("a squid", "an octopus"), ("a mouse", "a rat"),
    ("a lizard", "a salamander"), ("a bison", "a buffalo"), ("a hawk", "a falcon"), ("a centipede", "a millipede"),
    ("a glacier", "an iceberg"), ("a sea", "an ocean"), ("magma", "lava"), ("a stalactite", "a stalagmite"),
    ("sleet", "hail"), ("a solar eclipse", "a lunar eclipse"), ("a galaxy", "a solar system"),
    ("an atom", "a molecule"), ("an element", "a compound"), ("DNA", "RNA"), ("a food allergy", "a food intolerance"),
    ("an artery", "a vein"), ("a heart attack", "a cardiac arrest"), ("a tendon", "a ligament"),
    ("a dietitian", "a nutritionist"), ("an optometrist", "an ophthalmologist"), ("an antiseptic", "an antibiotic"),
    ("gross income", "net income"), ("APR", "APY"), ("a tax deduction", "a tax credit"), ("a patent", "a trademark"),
    ("plagiarism", "copyright infringement"), ("a misdemeanor", "a felony"), ("a solicitor", "a barrister"),
    ("a president", "a prime minister"), ("a referendum", "an election"), ("socialism", "communism"),
    ("a theory", "a hypothesis"), ("'its'", "'it's'"), ("'who'", "'whom'"), ("'i.e.'", "'e.g.'"), ("'lay'", "'lie'"),
    ("a colon", "a semicolon"), ("a dialect", "a language"), ("irony", "sarcasm"), ("a myth", "a legend"),
    ("a fable", "a parable"), ("a symphony", "a concerto"), ("an opera", "a musical"), ("a cello", "a double bass"),
    ("a clarinet", "an oboe"), ("a sequel", "a prequel"), ("a hotel", "a motel"), ("champagne", "prosecco"),
    ("whisky", "bourbon"), ("stock", "broth"), ("cilantro", "parsley"), ("a clementine", "a tangerine"),
    ("gelato", "ice cream"), ("bread flour", "all-purpose flour"), ("a pie", "a tart"), ("RAM", "storage"),
    ("a modem", "a router"), ("HTTP", "HTTPS"), ("a CPU", "a GPU"), ("AI", "machine learning"),
    ("Celsius", "Fahrenheit"), ("an equinox", "a solstice"),
)
DISTINCTION_TEMPLATES = (
    "What's the difference between {a} and {b}?", "How can I tell {a} from {b}?",
    "People mix up {a} and {b}. How are they different?", "Explain {a} versus {b} in simple terms.",
    "Are {a} and {b} the same thing?", "What do {a} and {b} have in common, and how are they different?",
    "Quick one: {a} vs. {b}?", "My friend says {a} and {b} are basically the same. Is that right?",
    "Give me an easy way to remember the difference between {a} and {b}.", "Describe {a} and {b} side by side.",
    # appended 2026-12-04 (DRAWS[1])
    "What sets {a} apart from {b}?", "I always confuse {a} and {b}. Can you clear it up?",
    "Where exactly does the line fall between {a} and {b}?",
    "Can you give me an example that shows the difference between {a} and {b}?",
    "How would an expert explain the difference between {a} and {b}?",
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
    # appended 2026-12-04 (DRAWS[1])
    "ways to declutter a closet", "uses for an old t-shirt", "plants that do well in a shady garden",
    "ways to make a rental apartment feel like home", "ways to keep a kitchen organized",
    "ideas for a cozy reading nook", "ways to childproof a living room", "houseplants that are safe for cats",
    "tips for hosting guests in a small flat", "toppings for a baked potato", "dips to serve with raw vegetables",
    "fillings for a lunchtime wrap", "ways to use up ripe bananas", "spices every beginner cook should own",
    "no-bake desserts for a hot day", "make-ahead breakfast ideas", "sauces to go with grilled chicken",
    "snacks for a movie night", "foods that are high in fiber", "salads that are filling enough for dinner",
    "easy dishes to bring to a potluck", "things to do on a first visit to a new city",
    "tips for traveling with only a carry-on bag", "questions to ask before booking a holiday rental",
    "souvenirs that aren't fridge magnets", "things to pack for a beach holiday",
    "tips for staying safe on a solo hike", "ways to save money on a city break", "activities for a day at the lake",
    "road trip snacks that don't make a mess", "ways to stay focused in an open-plan office",
    "polite ways to decline a meeting", "ideas for a team-building day", "tips for giving a short presentation",
    "things to include in a weekly status update", "ways to welcome a new colleague", "questions to ask a mentor",
    "ways to organize a cluttered desk", "agenda items for a project kickoff meeting",
    "ways to take a real break during the workday", "ways to make reading fun for a reluctant reader",
    "ideas for a class field trip", "topics for a five-minute speech", "picture books to read aloud to a class",
    "ways to help a child learn to tell time", "history topics for a school report", "ideas for a school fundraiser",
    "things to put in a back-to-school kit", "tips for taking clear notes in class", "quiet activities for a toddler",
    "ways to keep kids busy on a plane", "crafts made from cardboard boxes", "story ideas about friendly monsters",
    "games that need only a deck of cards", "art projects for preschoolers", "ways to teach kids about saving money",
    "names for a child's imaginary friend", "questions to ask kids at dinner", "songs to sing on a family car trip",
    "beginner knitting projects", "things to photograph on a walk around town", "hobbies that get you outside",
    "tips for learning to play the ukulele", "ideas for a bullet journal page", "things to draw when you feel stuck",
    "ways to get into birdwatching", "puzzle games that keep the mind sharp",
    "hobbies that can earn a little extra money", "beginner woodworking projects", "writing prompts about the sea",
    "opening lines for a mystery story", "plot twists for a fantasy novel", "journal prompts for the end of the year",
    "poem ideas about autumn", "story ideas set on a night train", "villain motives for an adventure story",
    "prompts for a letter to your future self", "names for a black puppy", "names for a sailing boat",
    "names for a coffee shop by the sea", "names for a family group chat", "names for a robot character",
    "names for a small hiking club", "names for a pet rabbit", "names for a spaceship in a sci-fi story",
    "names for a garden gnome", "words that rhyme with 'day'", "synonyms for 'said'", "adjectives to describe a forest",
    "verbs to describe how someone walks", "English words borrowed from other languages",
    "long words that are fun to say", "antonyms for 'brave'", "idioms about the weather",
    "compliments that aren't about looks", "fun facts about penguins", "fun facts about the Moon",
    "interesting facts about elephants", "surprising facts about sharks", "fun facts about Japan",
    "amazing facts about the human heart", "facts about volcanoes for kids", "animals that live in the desert",
    "famous landmarks in Europe", "animals that hibernate in winter", "interesting facts about the deep ocean",
    "ways to drink more water during the day", "healthy habits to start in the new year",
    "stretches to do before a run", "simple ways to walk more each day", "tips for eating well on a budget",
    "ways to rest your eyes when working at a computer", "easy ways to reduce stress at work",
    "ways to save up for a holiday", "side hustle ideas for students", "questions to ask before making a big purchase",
    "ways to cut the monthly electricity bill", "tips for sticking to a budget", "money lessons to teach teenagers",
    "ideas for a baby shower", "themes for a fortieth birthday party", "ideas for a retirement party",
    "games for a wedding reception", "ideas for a neighborhood block party", "ways to celebrate a graduation",
    "things to do on a snowy day", "ways to enjoy spring in the city", "summer holiday ideas that cost nothing",
    "ways to stay cheerful during the dark winter months", "things to do on the first warm day of spring",
)
LIST_COUNTS = ("3", "5", "7", "10", "three", "four", "five", "six", "eight", "ten")
LIST_TEMPLATES = (
    "Give me {n} {x}.", "List {n} {x}.", "Can you suggest {n} {x}?", "I need {n} {x}.", "Brainstorm {n} {x} for me.",
    "Make a numbered list of {n} {x}.", "Quick list: {n} {x}, please.", "Could you come up with {n} {x}?",
    "Share {n} {x}, with one line about each.", "What are some {x}? Give me {n}.",
    "Help me brainstorm {x}. I'd like at least {n}.", "Write a bullet list of {n} {x}.", "Top {n} {x}?",
    "I'm looking for {x}. Can you list {n}?",
    # appended 2026-12-04 (DRAWS[1])
    "Name {n} {x}.", "Can you give me {n} {x}?", "Jot down {n} {x} for me, please.",
    "Suggest {n} {x}, each with a short explanation.", "I could use some {x}. Can you think of {n}?",
    "Put together a short list of {x}, about {n} in total.",
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
    # appended 2026-12-04 (DRAWS[1])
    "a scarecrow who wants to make friends with the crows", "a moth who falls in love with the Moon",
    "a grandfather and granddaughter building a kite for a contest", "a museum where the statues argue at night",
    "a kid who trades a lunch sandwich for a magic bean", "a parrot who repeats a secret it shouldn't",
    "a music box that plays a different song for every listener", "a night watchman at a toy factory",
    "a goldfish who dreams of the open ocean", "a sleepy town that forgets one word every morning",
    "a baker whose bread makes people tell the truth", "two neighbors who only talk through notes on a fence",
    "a rainy afternoon in a house full of cousins", "an umbrella that only works for kind people",
    "a boy who collects other people's lost memories", "a tailor who sews a coat out of the night sky",
    "a beekeeper whose bees start spelling out words", "a library book that is ten years overdue",
    "a girl who can hear what houses are thinking", "a county fair where the prize pig goes missing",
    "a hot-air balloon race around the world", "an elevator that stops at a floor that shouldn't exist",
    "a crab who wants to walk forward", "a mountain guide leading a group through a sudden blizzard",
    "a kid who accidentally becomes mayor for a day", "a whale who sings to a lonely ship",
    "a garden gnome who goes on vacation", "a clockmaker's apprentice who breaks the town clock",
    "a postcard that arrives fifty years late", "a family of raccoons moving into an empty mansion",
    "an old sailor teaching a city kid to fish", "a spaceship crew that finds a garden on a comet",
    "a candle that refuses to go out", "a marathon runner who stops to help a stranger",
    "a choir of frogs preparing for the big pond concert", "a snow globe holding a tiny town that is very much alive",
    "a grumpy neighbor who secretly feeds the stray cats", "a kid who is the only one who remembers yesterday",
    "a shadow that leaves its owner to travel the world", "a small-town radio host who gets a call from space",
    "a chess piece that wants to leave the board", "a firefly who has lost her glow",
    "a bakery that opens only at midnight", "a boy and his grandmother restoring an old sailboat",
    "a wishing well that grants the wrong wishes", "a zookeeper on the night all the animals swap enclosures",
    "a lost kite that drifts across three countries", "a princess who would rather be a blacksmith",
    "a scientist who shrinks herself to explore a drop of pond water", "a cat who runs for mayor",
    "a group of grandparents who start a rock band", "a tree house that grows a new room every night",
    "a kid who finds a dinosaur egg in the backyard", "a weather forecaster who can actually change the weather",
    "a bridge troll who asks for compliments instead of coins", "the day the sun forgot to rise",
    "an island where it is always someone's birthday", "a lonely robot vacuum that explores the house at night",
    "a girl who inherits a bookshop full of talking cats", "a lighthouse beam that guides a lost star home",
)
STORY_CHARACTERS = (
    "a curious hedgehog", "an elderly inventor", "a nervous young wizard", "a tiny robot", "a brave little sister",
    "a grumpy cat", "a retired sea captain", "a clumsy knight", "a talking umbrella", "a lonely lighthouse keeper",
    "a kind dragon", "the new kid in class", "a forgetful princess", "a street musician", "a baby elephant",
    "a detective who is scared of the dark", "a polar bear", "a mischievous fox", "a young astronaut",
    "a friendly ghost",
    # appended 2026-12-04 (DRAWS[1])
    "a shy octopus", "an old tortoise", "a young baker", "a stubborn goat", "a sleepy bear cub",
    "a junior park ranger", "a wise old owl", "a cheerful mail carrier", "a loyal sheepdog", "a retired circus clown",
    "a quiet field mouse", "an apprentice clockmaker", "a homesick alien", "a talkative parrot",
    "a twelve-year-old inventor",
)
STORY_GOALS = (
    "who wants to win a baking contest", "who has lost something very important", "who must deliver a secret message",
    "who is looking for a new home", "who dreams of seeing the ocean", "who accidentally shrinks to the size of an ant",
    "who has to make a difficult choice", "who is trying to keep a promise", "who finds a mysterious egg",
    "who wants to learn to dance", "who gets lost on the way home", "who discovers a hidden talent",
    "who must stop a storm", "who is planning a surprise for a friend", "who wakes up with a strange new power",
    # appended 2026-12-04 (DRAWS[1])
    "who wants to make a new friend", "who finds a map to a hidden treasure", "who is afraid of heights",
    "who receives a letter from the future", "who has one day to save their home", "who wants to win the big race",
    "who keeps hearing a strange song at night", "who accidentally breaks a magic spell",
    "who is searching for a missing friend", "who has to look after a baby dragon",
    "who wants to throw the best party ever", "who becomes invisible for a day",
)
STORY_SETTINGS = (
    "in a snowy mountain village", "on a pirate ship", "in a busy city market", "in an underwater kingdom",
    "on a space station", "in a haunted library", "in a magical forest", "in a tiny apartment above a bakery",
    "at a summer camp", "in a desert town", "in the year 3000", "on a farm", "inside a video game",
    "at a royal palace", "on a train across the country",
    # appended 2026-12-04 (DRAWS[1])
    "in a floating city in the clouds", "at a busy train station", "in a sleepy seaside town", "on a tiny island",
    "in a toy shop after closing time", "at a traveling circus", "in a kingdom made of candy", "on the Moon",
    "in a steamy rainforest", "at a school for young wizards", "in a lighthouse on a stormy night",
    "at a night market full of lanterns",
)
STORY_TEMPLATES = (
    "Write a short story about {x}.", "Tell me a bedtime story about {x}.", "Write a 200-word story about {x}.",
    "Can you write a funny story about {x}?", "Write the opening paragraph of a novel about {x}.",
    "Write a fairy tale about {x}.", "I need a short story for my class about {x}. Keep it under 300 words.",
    "Write a first-person story about {x}.", "Write a story for kids about {x}, with a lesson at the end.",
    "Write a very short story (under 100 words) about {x}.", "Write a mystery story about {x}.",
    "Write a story told in diary entries about {x}.", "Write a poem that tells the story of {x}.",
    "Tell me a story about {x} that ends with a surprise.", "Write a short scene with dialogue about {x}.",
    # appended 2026-12-04 (DRAWS[1])
    "Write a short adventure story about {x}.", "Could you write a heartwarming story about {x}?",
    "Tell me a cozy story about {x} that I can read aloud in five minutes.",
    "Write a story about {x}, told from an unexpected point of view.",
    "Write a short story about {x} for a middle-school reading class.", "Write the final chapter of a story about {x}.",
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


def fence_cost(r):
    width, length, gate, price = r.randint(4, 15), r.randint(6, 25), r.randint(1, 3), r.randint(8, 25)
    return (f"A rectangular garden is {width} m wide and {length} m long. It needs a fence all the way around, except "
            f"for a {gate} m gate. If fencing costs ${price} per meter, how much will the fence cost?")


def simple_interest(r):
    name, principal, rate, years = r.choice(NAMES), r.randrange(500, 5000, 100), r.randint(2, 6), r.randint(2, 5)
    return (f"{name} puts ${principal} in a savings account that pays {rate}% simple interest per year. How much "
            f"interest will {name} have earned after {years} years?")


def mix_ratio(r):
    mix, first, second, unit = r.choice((("light blue paint", "white paint", "blue paint", "liters"),
                                         ("lemonade", "water", "lemon syrup", "cups"),
                                         ("potting soil", "compost", "sand", "kilograms"),
                                         ("trail mix", "peanuts", "raisins", "grams")))
    a, b = r.choice(((2, 1), (3, 1), (3, 2), (4, 1), (5, 2), (5, 3), (4, 3)))
    total = (a + b) * (r.randint(2, 12) if unit != "grams" else r.randrange(20, 100, 10))
    return (f"To make {mix}, {first} and {second} are mixed in the ratio {a}:{b}. How many {unit} of each are needed "
            f"to make {total} {unit} of {mix}?")


def catch_up(r):
    name, friend = r.sample(NAMES, 2)
    slow, head, gap = r.randrange(40, 90, 10), r.randint(1, 3), r.choice((10, 20, 40))  # slow * head / gap: quarters
    return (f"{name} leaves town driving at {slow} km/h. {friend} sets off on the same road {head} "
            f"hour{'s' if head > 1 else ''} later, driving at {slow + gap} km/h. How long after setting off does "
            f"{friend} catch up with {name}?")


def days_between(r):
    name, (month, days) = r.choice(NAMES), r.choice((("January", 31), ("March", 31), ("April", 30), ("May", 31),
                                                     ("June", 30), ("July", 31), ("August", 31), ("September", 30),
                                                     ("October", 31), ("November", 30), ("December", 31)))
    start = r.randint(1, days - 5)
    end = r.randint(start + 3, days)
    return r.choice((f"{name} checks into a hotel on {month} {start} and checks out on {month} {end}. How many nights "
                     f"does {name} stay?",
                     f"{name} borrows a library book on {month} {start} and must return it by {month} {end}. How many "
                     f"days does {name} have to read it?"))


def price_rise(r):
    item, old = r.choice(("a monthly bus pass", "a concert ticket", "a pair of running shoes", "a winter coat",
                          "a monthly gym membership", "a monthly phone plan")), r.randrange(20, 200, 20)
    new = old + old * r.choice((5, 10, 15, 20, 25, 30, 40, 50)) // 100  # old is a multiple of 20, so this is exact
    return f"Last year {item} cost ${old}. This year it costs ${new}. By what percentage did the price go up?"


def split_bill(r):
    people, tip = r.randint(2, 8), r.choice((10, 15, 20))
    bill = people * (20 if tip == 15 else 10) * r.randint(2, 8)  # so the tip and each share come out whole
    return (f"A group of {people} friends have dinner and the bill comes to ${bill}. They add a {tip}% tip and split "
            "the total equally. How much does each person pay?")


def average_speed(r):
    mean, first_hours, second_hours = r.randrange(50, 95, 5), r.randint(1, 2), r.randint(1, 2)
    first_speed = mean + r.choice((-10, -5, 5, 10))
    first_km = first_speed * first_hours
    second_km = mean * (first_hours + second_hours) - first_km  # so the average over both legs is `mean`
    return (f"A bus drives {first_km} km in {first_hours} hour{'s' if first_hours > 1 else ''}, then another "
            f"{second_km} km in {second_hours} hour{'s' if second_hours > 1 else ''}. What is its average speed for "
            "the whole journey?")


def farm_legs(r):
    two, four = r.choice((("chickens", "cows"), ("ducks", "goats"), ("geese", "sheep"), ("hens", "pigs")))
    birds, beasts = r.randint(3, 30), r.randint(2, 20)
    return (f"A farm has only {two} and {four}. Altogether there are {birds + beasts} heads and "
            f"{2 * birds + 4 * beasts} legs. How many {two} and how many {four} are there?")


def practice_hours(r):
    name, minutes, days = r.choice(NAMES), r.randrange(15, 120, 15), r.randint(3, 30)  # quarter hours
    activity = r.choice(("practices the piano", "reads", "goes jogging", "studies Spanish", "walks the dog"))
    return f"{name} {activity} for {minutes} minutes a day for {days} days. How many hours is that in total?"


def ribbon_pieces(r):
    piece, count = r.choice((10, 15, 20, 25, 30, 40, 50, 75)), r.randint(4, 30)
    thing = r.choice(("ribbon", "rope", "roll of fabric", "piece of string", "length of garden hose"))
    return (f"A {thing} is {piece * count / 100:g} m long. How many pieces of {piece} cm can be cut from it with "
            "nothing left over?")


def triangle_area(r):
    base, height = r.randint(2, 20), r.randint(2, 16)
    thing = r.choice(("flower bed", "sail", "corner of a lawn", "pennant flag", "roof gable"))
    unit = "cm" if thing == "pennant flag" else "m"
    return (f"A triangular {thing} has a base of {base} {unit} and a height of {height} {unit}. What is its area in "
            f"square {unit}?")


def bag_probability(r):
    total = r.choice((10, 20, 25, 50))  # divides 100, so the probability is a clean decimal
    red = r.randint(1, total - 2)
    blue = r.randint(1, total - red - 1)
    things = r.choice(("marbles", "sweets", "buttons", "beads"))
    name, color = r.choice(NAMES), r.choice(("red", "blue", "green"))
    return (f"A bag holds {red} red, {blue} blue and {total - red - blue} green {things}. {name} picks one without "
            f"looking. What is the probability that it is {color}?")


def floor_tiles(r):
    width, length, tile = r.randint(2, 8), r.randint(3, 12), r.choice((20, 25, 50))
    room = r.choice(("kitchen", "bathroom", "hallway", "patio", "laundry room"))
    return (f"A {room} floor is {width} m wide and {length} m long. How many square tiles measuring {tile} cm by "
            f"{tile} cm are needed to cover it?")


MATH_PROBLEMS = (
    shopping_total, change_owed, distance, travel_time, recipe_scaling, discount, percent_of_group, ages, room_area,
    sharing, clock_time, unit_price, saving_weeks, fuel_use, workers, score_average, wages, pizza_fraction,
    tank_volume, temperature,
    # appended 2026-12-04 (DRAWS[1])
    fence_cost, simple_interest, mix_ratio, catch_up, days_between, price_rise, split_bill, average_speed, farm_legs,
    practice_hours, ribbon_pieces, triangle_area, bag_probability, floor_tiles,
)
MATH_FRAMES = (
    "Can you help me solve this? {p}", "Explain step by step: {p}", "{p} Please show your working.",
    "My homework says: \"{p}\" How do I solve it?", "I'm stuck on this word problem: {p}",
    "{p} Can you explain how to get the answer?", "Help me with this math problem. {p}",
    "How would you solve this? {p}",
    "Word problem: {p} Walk me through it.", "My friend and I got different answers. {p} What's the right one?",
    "Solve this and explain each step simply: {p}", "Can you explain this so my 10-year-old understands? {p}", "{p}",
    "Please check my thinking on this one: {p}",
    # appended 2026-12-04 (DRAWS[1])
    "Could you solve this for me and explain your reasoning? {p}", "Here's a problem from my worksheet: {p}",
    "{p} I'd like to understand the method, not just the answer.", "Show me two different ways to solve this: {p}",
    "My teacher gave us this problem today: {p} Where do I begin?", "{p} Is there a quick way to check the answer?",
)


# (kind, template tuple, subject tuple, templates drawn per subject); subjects are strings or (a, b) pairs
TEMPLATED = (
    ("explain", "EXPLAIN_TEMPLATES", "EXPLAIN_QUESTIONS", 5), ("howto", "HOWTO_TEMPLATES", "HOWTO_TASKS", 5),
    ("recipe", "DISH_TEMPLATES", "DISHES", 5), ("recipe", "PANTRY_TEMPLATES", "PANTRY_INGREDIENTS", 4),
    ("summary", "SUMMARY_TEMPLATES", "SUMMARY_PASSAGES", 11), ("advice", "ADVICE_TEMPLATES", "ADVICE_SITUATIONS", 5),
    ("compare", "CHOICE_TEMPLATES", "CHOICE_PAIRS", 5), ("compare", "DISTINCTION_TEMPLATES", "DISTINCTION_PAIRS", 5),
    ("list", "LIST_TEMPLATES", "LIST_REQUESTS", 5), ("story", "STORY_TEMPLATES", "STORY_PREMISES", 5),
)
# The size of every tuple at each draw of the committed prompts file (data/prompts.json): draw k reads the entries
# between draw k-1's sizes and its own (all its templates), from a seeded stream of its own, so that appending to a
# tuple adds prompts and changes none that is committed. Entries appended since the last draw here make a new draw.
DRAWS = (
    {  # 2026-12-02, drafter v2: the first material
        "EXPLAIN_QUESTIONS": 115, "EXPLAIN_TEMPLATES": 16, "HOWTO_TASKS": 122, "HOWTO_TEMPLATES": 14, "DISHES": 91,
        "DISH_TEMPLATES": 14, "PANTRY_INGREDIENTS": 30, "PANTRY_TEMPLATES": 6, "SUMMARY_PASSAGES": 48,
        "SUMMARY_TEMPLATES": 16, "ADVICE_SITUATIONS": 103, "ADVICE_TEMPLATES": 15, "CHOICE_PAIRS": 75,
        "CHOICE_TEMPLATES": 12, "DISTINCTION_PAIRS": 48, "DISTINCTION_TEMPLATES": 10, "LIST_REQUESTS": 109,
        "LIST_TEMPLATES": 14, "STORY_PREMISES": 50, "STORY_TEMPLATES": 15, "STORY_CHARACTERS": 20, "STORY_GOALS": 15,
        "STORY_SETTINGS": 15, "MATH_PROBLEMS": 20, "MATH_FRAMES": 14,
    },
    {  # 2026-12-04, for drafter v6: about as many subjects again, more templates, story parts and math problems
        "EXPLAIN_QUESTIONS": 275, "EXPLAIN_TEMPLATES": 24, "HOWTO_TASKS": 282, "HOWTO_TEMPLATES": 22, "DISHES": 201,
        "DISH_TEMPLATES": 20, "PANTRY_INGREDIENTS": 70, "PANTRY_TEMPLATES": 10, "SUMMARY_PASSAGES": 103,
        "SUMMARY_TEMPLATES": 22, "ADVICE_SITUATIONS": 233, "ADVICE_TEMPLATES": 21, "CHOICE_PAIRS": 165,
        "CHOICE_TEMPLATES": 17, "DISTINCTION_PAIRS": 118, "DISTINCTION_TEMPLATES": 15, "LIST_REQUESTS": 239,
        "LIST_TEMPLATES": 20, "STORY_PREMISES": 110, "STORY_TEMPLATES": 21, "STORY_CHARACTERS": 35, "STORY_GOALS": 27,
        "STORY_SETTINGS": 27, "MATH_PROBLEMS": 34, "MATH_FRAMES": 20,
    },
)


def upper_first(text: str) -> str:
    return text[0].upper() + text[1:]


def fill(rng: random.Random, kind: str, templates: tuple, templates_name: str, items: list[tuple[str, dict]],
         per_item: int) -> list[dict]:
    """Prompts from `per_item` distinct `templates` per (source label, format fields) item; SUFFIX_RATE of them get
    one of SUFFIXES[kind]. Fields: x and X (subject, and capitalized) or a, A and b (pair); n (a count) is drawn here."""
    out = []
    for label, fields in items:
        for t in rng.sample(range(len(templates)), per_item):
            text = templates[t].format(n=rng.choice(LIST_COUNTS), **fields)
            source = f"template:{templates_name}[{t}] x {label}"
            if SUFFIXES[kind] and rng.random() < SUFFIX_RATE:
                s = rng.randrange(len(SUFFIXES[kind]))
                text, source = f"{text} {SUFFIXES[kind][s]}", f"{source} + SUFFIXES[{kind!r}][{s}]"
            out.append({"kind": kind, "source": source, "prompt": upper_first(text)})
    return out


def subject_items(name: str, start: int, stop: int) -> list[tuple[str, dict]]:
    """(source label, format fields) items of entries start..stop-1 of the subject tuple called `name`: strings or
    (a, b) pairs."""
    return [(f"{name}[{i}]", {"a": v[0], "A": upper_first(v[0]), "b": v[1]} if isinstance(v, tuple)
             else {"x": v, "X": upper_first(v)}) for i, v in enumerate(globals()[name][start:stop], start)]


def story_combos(rng: random.Random, before: dict, sizes: dict) -> list[tuple[str, dict]]:
    """STORY_COMBOS sampled character + goal + setting premises, as (label, fields) items, among the combinations of
    the parts within `sizes` that are not all within `before`."""
    parts = ("STORY_CHARACTERS", "STORY_GOALS", "STORY_SETTINGS")
    grid = [combo for combo in itertools.product(*(range(sizes[name]) for name in parts))
            if not all(i < before[name] for i, name in zip(combo, parts))]
    return [(f"STORY_CHARACTERS[{c}]+STORY_GOALS[{g}]+STORY_SETTINGS[{s}]",
             {"x": f"{STORY_CHARACTERS[c]} {STORY_GOALS[g]} {STORY_SETTINGS[s]}"})
            for c, g, s in rng.sample(grid, min(STORY_COMBOS, len(grid)))]


def math_prompts(rng: random.Random, problems: tuple, frames: tuple) -> list[dict]:
    """MATH_COUNT unique word problems (fewer if `problems` cannot make so many), cycling through `problems`, each in
    a random phrasing of `frames`."""
    out, seen = [], set()
    for i in range(MATH_COUNT * 20 if problems else 0):
        if len(out) == MATH_COUNT:
            break
        problem, f = problems[i % len(problems)], rng.randrange(len(frames))
        text = frames[f].format(p=problem(rng))
        if text not in seen:
            seen.add(text)
            out.append({"kind": "math", "source": f"generated:math {problem.__name__} (seeded numbers) x "
                        f"MATH_FRAMES[{f}]", "prompt": text})
    return out


def draw(rng: random.Random, before: dict, sizes: dict) -> list[dict]:
    """One draw's prompts: the subjects, story parts and math problems past `before` (tuple sizes) up to `sizes`,
    with the templates and frames up to `sizes`."""
    whole = lambda name: globals()[name][:sizes[name]]  # noqa: E731
    prompts = [prompt for kind, templates, subjects, per in TEMPLATED
               for prompt in fill(rng, kind, whole(templates), templates, subject_items(subjects, before[subjects],
                                                                                         sizes[subjects]), per)]
    stories = fill(rng, "story", whole("STORY_TEMPLATES"), "STORY_TEMPLATES", story_combos(rng, before, sizes), 1)
    problems = MATH_PROBLEMS[before["MATH_PROBLEMS"]:sizes["MATH_PROBLEMS"]]
    return prompts + stories + math_prompts(rng, problems, whole("MATH_FRAMES"))


def chat_prompts(seed: int = 0) -> list[dict]:
    """General-chat prompts as {"kind": str, "source": str, "prompt": str} dicts, deterministic for a seed: every
    draw of DRAWS in turn, then one over the entries appended since the last (none while the file is up to date)."""
    rng = random.Random(seed)
    now = {name: len(globals()[name]) for name in DRAWS[-1]}
    bounds = [{name: 0 for name in now}, *DRAWS, now]
    unique = {}
    for k, (before, sizes) in enumerate(zip(bounds, bounds[1:])):
        for p in draw(rng if k == 0 else random.Random(f"{seed}:draw{k}"), before, sizes):
            unique.setdefault(p["prompt"], p)
    unique = list(unique.values())
    rng.shuffle(unique)
    return unique


if __name__ == "__main__":
    from collections import Counter

    result = chat_prompts()
    print(len(result), dict(Counter(p["kind"] for p in result)))
