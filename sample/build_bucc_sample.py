"""Write the bundled BUCC-format example, sample/bucc/de-en.{training,test}.{de,en,gold}.

The sentences below were written for this project (news-style German sentences, their English translations, and
unrelated sentences and web boilerplate on both sides). Each split hides 20 translation pairs, plus one
boilerplate pair whose texts occur twice (ambiguous by the BUCC rule, so unreachable), among distractors.
Lines are shuffled with a fixed seed, so running this script again rewrites identical files:

    python sample/build_bucc_sample.py
"""

from __future__ import annotations

import random
from pathlib import Path

OUT = Path(__file__).resolve().parent / "bucc"
SEED = 2018
AMBIGUOUS = ("Alle Rechte vorbehalten.", "All rights reserved.")

SPLITS = {
    "training": {
        "pairs": [
            ("Die Stadt Hamburg hat im vergangenen Jahr 1,9 Millionen Einwohner gezählt.",
             "The city of Hamburg counted 1.9 million inhabitants last year."),
            ("Der Zug nach München hatte wegen eines Sturms drei Stunden Verspätung.",
             "The train to Munich was three hours late because of a storm."),
            ("Forscher der Universität Heidelberg haben ein neues Enzym entdeckt.",
             "Researchers at Heidelberg University have discovered a new enzyme."),
            ("Die Europäische Zentralbank ließ den Leitzins unverändert bei 4,5 Prozent.",
             "The European Central Bank left its key interest rate unchanged at 4.5 percent."),
            ("Im Finale gewann Bayern München mit 2:1 gegen Borussia Dortmund.",
             "In the final, Bayern Munich beat Borussia Dortmund 2-1."),
            ("Das Museum zeigt ab Mai Gemälde von Paula Modersohn-Becker.",
             "From May, the museum is showing paintings by Paula Modersohn-Becker."),
            ("Am Wochenende wird in ganz Norddeutschland starker Regen erwartet.",
             "Heavy rain is expected across northern Germany at the weekend."),
            ("Die Regierung plant, bis 2030 insgesamt 400.000 neue Wohnungen zu bauen.",
             "The government plans to build a total of 400,000 new homes by 2030."),
            ("Meine Großmutter backt jeden Sonntag einen Apfelkuchen.",
             "My grandmother bakes an apple cake every Sunday."),
            ("Der Vulkan Ätna auf Sizilien ist in der Nacht erneut ausgebrochen.",
             "Mount Etna in Sicily erupted again during the night."),
            ("Die Firma Siemens meldete für das dritte Quartal einen Gewinn von 2,1 Milliarden Euro.",
             "Siemens reported a profit of 2.1 billion euros for the third quarter."),
            ("Kinder unter sechs Jahren fahren in den Bussen kostenlos.",
             "Children under six travel free on the buses."),
            ("Das Konzert der Berliner Philharmoniker war innerhalb von zehn Minuten ausverkauft.",
             "The Berlin Philharmonic's concert sold out within ten minutes."),
            ("Der Patient wurde nach der Operation auf die Intensivstation verlegt.",
             "After the operation, the patient was moved to the intensive care unit."),
            ("Die Brücke über den Rhein bleibt bis Ende Oktober gesperrt.",
             "The bridge over the Rhine remains closed until the end of October."),
            ("Der Astronaut Alexander Gerst verbrachte 196 Tage auf der Internationalen Raumstation.",
             "The astronaut Alexander Gerst spent 196 days on the International Space Station."),
            ("Bitte schalten Sie Ihr Mobiltelefon während der Vorstellung aus.",
             "Please switch off your mobile phone during the performance."),
            ("Die Inflation in Österreich sank im Juni auf 3,2 Prozent.",
             "Inflation in Austria fell to 3.2 percent in June."),
            ("Der Roman wurde in mehr als 40 Sprachen übersetzt.",
             "The novel has been translated into more than 40 languages."),
            ("Wir haben unsere Öffnungszeiten über die Feiertage geändert.",
             "We have changed our opening hours over the holidays."),
        ],
        "de_only": [
            "Der Bürgermeister eröffnete gestern den neuen Spielplatz im Stadtpark.",
            "Die Temperaturen steigen morgen in Köln auf bis zu 31 Grad.",
            "Der Verein sucht dringend ehrenamtliche Trainer für die Jugendmannschaft.",
            "Die Ausstellung über die Geschichte der Eisenbahn endet im Januar.",
            "Viele Pendler nutzen inzwischen das Fahrrad statt des Autos.",
            "Der Schriftsteller las aus seinem neuen Buch über die Ostsee.",
            "Die Polizei bittet Zeugen, sich bei der Dienststelle in Bremen zu melden.",
            "Die Preise für Heizöl sind seit dem Frühjahr deutlich gestiegen.",
            "Im Zoo Leipzig wurde ein kleiner Elefant geboren.",
            "Die Schule erhält neue Computer für den Informatikunterricht.",
            "Impressum",
        ],
        "en_only": [
            "The mayor of Liverpool announced a new plan for public transport.",
            "Shares in the carmaker fell by 7 percent after the announcement.",
            "Scientists in Norway recorded the warmest October since 1900.",
            "The festival attracts more than 50,000 visitors every summer.",
            "A new study suggests that coffee may protect against liver disease.",
            "The airline cancelled 120 flights because of a strike by pilots.",
            "The restaurant is closed on Mondays and public holidays.",
            "Volunteers planted 3,000 trees along the river last spring.",
            "The minister resigned after weeks of criticism from the opposition.",
            "Tickets for the exhibition can be booked online.",
            "The team's coach was sacked after five defeats in a row.",
            "Rents in London rose by 9 percent over the past twelve months.",
            "The police are searching for a man who escaped from prison in Leeds.",
            "The library will host a reading by the author on Thursday evening.",
            "Farmers are worried about the lack of rain this summer.",
            "The company plans to open 15 new stores in Spain.",
            "Our newsletter keeps you informed about new products.",
            "The hospital is looking for nurses for its children's ward.",
            "A rare bird was spotted in the national park for the first time in decades.",
            "The film won three awards at the festival in Venice.",
            "Privacy policy",
            "Add to cart",
            "The train from Paris to Brussels takes about one hour and twenty minutes.",
            "The University of Oxford has opened a new research centre for enzymes.",
        ],
    },
    "test": {
        "pairs": [
            ("Der Flughafen Frankfurt zählte im August 5,6 Millionen Passagiere.",
             "Frankfurt Airport counted 5.6 million passengers in August."),
            ("Die Bundesregierung will die Steuer auf Strom senken.",
             "The federal government wants to cut the tax on electricity."),
            ("Ein Erdbeben der Stärke 6,1 erschütterte die Küste von Chile.",
             "An earthquake of magnitude 6.1 shook the coast of Chile."),
            ("Die Bibliothek bleibt wegen Renovierungsarbeiten bis März geschlossen.",
             "The library will remain closed for renovation work until March."),
            ("Der Tennisspieler Alexander Zverev erreichte das Halbfinale in Madrid.",
             "The tennis player Alexander Zverev reached the semi-final in Madrid."),
            ("Die Ärzte raten, im Winter mehr Vitamin D zu sich zu nehmen.",
             "Doctors advise taking more vitamin D in winter."),
            ("Das Unternehmen Volkswagen will 5000 Stellen in der Verwaltung streichen.",
             "Volkswagen wants to cut 5,000 administrative jobs."),
            ("Die Schüler pflanzten im Schulgarten Tomaten und Kartoffeln.",
             "The pupils planted tomatoes and potatoes in the school garden."),
            ("Die Ausstellung im Louvre zeigt Zeichnungen von Leonardo da Vinci.",
             "The exhibition at the Louvre shows drawings by Leonardo da Vinci."),
            ("Am Dienstag streiken die Lokführer in ganz Deutschland.",
             "Train drivers across Germany are going on strike on Tuesday."),
            ("Der Preis für ein Kilogramm Kaffee ist auf 12 Euro gestiegen.",
             "The price of a kilogram of coffee has risen to 12 euros."),
            ("Die Feuerwehr konnte den Brand nach vier Stunden löschen.",
             "The fire brigade was able to put out the fire after four hours."),
            ("Die Sängerin Helene Fischer gibt im Juli drei Konzerte in Wien.",
             "The singer Helene Fischer is giving three concerts in Vienna in July."),
            ("Wie komme ich am schnellsten zum Hauptbahnhof?",
             "What is the quickest way to the main station?"),
            ("Die Zahl der Arbeitslosen in der Schweiz liegt bei 2,3 Prozent.",
             "Unemployment in Switzerland stands at 2.3 percent."),
            ("Der Hund unserer Nachbarn bellt jede Nacht stundenlang.",
             "Our neighbours' dog barks for hours every night."),
            ("Die Mission der NASA soll im Jahr 2027 zum Mond starten.",
             "The NASA mission is due to launch to the Moon in 2027."),
            ("Das neue Hallenbad kostet die Stadt 28 Millionen Euro.",
             "The new indoor swimming pool is costing the city 28 million euros."),
            ("Der Dirigent Kirill Petrenko leitet das Orchester seit 2019.",
             "The conductor Kirill Petrenko has led the orchestra since 2019."),
            ("Kostenloser Versand ab einem Bestellwert von 50 Euro.",
             "Free shipping on orders over 50 euros."),
        ],
        "de_only": [
            "Die Gemeinde plant einen neuen Radweg entlang der Elbe.",
            "Der Sportverein feiert in diesem Jahr sein hundertjähriges Bestehen.",
            "Die Apotheke am Marktplatz hat auch sonntags geöffnet.",
            "In Dresden wurde ein Denkmal für die Opfer des Hochwassers errichtet.",
            "Der Weinbau an der Mosel leidet unter der Trockenheit.",
            "Die Kinder bastelten Laternen für den Martinsumzug.",
            "Der Landtag debattierte stundenlang über das neue Schulgesetz.",
            "Ein Lastwagen verlor auf der Autobahn A7 seine Ladung.",
            "Die Universität Göttingen bietet einen neuen Studiengang an.",
            "Das Theater zeigt in der neuen Spielzeit fünf Premieren.",
            "Datenschutzerklärung",
        ],
        "en_only": [
            "Passenger numbers at Heathrow rose sharply in the summer.",
            "The city council voted to ban cars from the old town.",
            "An earthquake damaged several buildings in northern Japan.",
            "The museum is free for students on Wednesdays.",
            "The singer cancelled her tour because of illness.",
            "Coffee farmers in Brazil expect a smaller harvest this year.",
            "The bank raised its forecast for economic growth to 1.4 percent.",
            "Firefighters rescued a cat from a tree in Manchester.",
            "The new stadium will hold 60,000 spectators.",
            "Teachers are calling for smaller classes.",
            "A storm caused power cuts in thousands of homes in Scotland.",
            "The app lets users pay for parking with their phone.",
            "The exhibition of modern art opens on Friday in New York.",
            "Doctors warn that too much sugar increases the risk of diabetes.",
            "The space agency tested a new rocket engine in Texas.",
            "The swimming team won four gold medals at the championships.",
            "Subscribe to our newsletter.",
            "Terms and conditions",
            "Customer reviews",
            "The orchestra played works by Mozart and Beethoven.",
            "Unemployment in Spain fell to its lowest level in fifteen years.",
            "The zoo welcomed a baby giraffe last week.",
        ],
    },
}


def build_split(split: str, spec: dict, rng: random.Random) -> dict[str, str]:
    """File name -> content for one split."""
    pairs = spec["pairs"] + [AMBIGUOUS]
    de = [de for de, _ in pairs] + spec["de_only"] + [AMBIGUOUS[0]]
    en = [en for _, en in pairs] + spec["en_only"] + [AMBIGUOUS[1]]
    rng.shuffle(de)
    rng.shuffle(en)
    de_ids = {text: f"de-{i:06d}" for i, text in reversed(list(enumerate(de, start=1)))}  # first occurrence
    en_ids = {text: f"en-{i:06d}" for i, text in reversed(list(enumerate(en, start=1)))}
    gold = sorted(f"{de_ids[d]}\t{en_ids[e]}" for d, e in pairs)
    return {
        f"de-en.{split}.de": "".join(f"de-{i:06d}\t{t}\n" for i, t in enumerate(de, start=1)),
        f"de-en.{split}.en": "".join(f"en-{i:06d}\t{t}\n" for i, t in enumerate(en, start=1)),
        f"de-en.{split}.gold": "".join(f"{line}\n" for line in gold),
    }


def build() -> dict[str, str]:
    rng = random.Random(SEED)
    return {name: text for split, spec in SPLITS.items() for name, text in build_split(split, spec, rng).items()}


if __name__ == "__main__":
    OUT.mkdir(exist_ok=True)
    for name, text in build().items():
        (OUT / name).write_text(text, encoding="utf-8")
        print(OUT / name)
