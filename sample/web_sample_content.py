"""The text of the bundled web sample (sample/web/), written for this project; build_web_sample.py turns it into HTML.

Five stories, each published by its own (made-up) website as one page per language. A story's English article has
seven sentences keyed "c1".."c7" that the other languages translate, sentence by sentence (the gold pairs), and two
sentences keyed OWN that no other page translates. Each non-English page leaves out one or two of the seven now and
then and adds one to three OWN sentences of its own (local details), so a miner has to tell translations from
sentences on the same subject.

A page is `page(title, paragraph, paragraph, ...)`; a paragraph is a list of (key, sentence). The titles (the
article's <h1>) translate one another too. Everything around the article (menus, cookie notice, sidebar, footer)
comes from UI below and is boilerplate for the extractor to remove.
"""

from __future__ import annotations

OWN = ""  # key of a sentence that has no translation on any other page

LANGUAGES = ("eng_Latn", "deu_Latn", "fra_Latn", "spa_Latn", "rus_Cyrl", "zho_Hans")
PIVOT = "eng_Latn"

HTML_LANG = {"eng_Latn": "en", "deu_Latn": "de", "fra_Latn": "fr", "spa_Latn": "es", "rus_Cyrl": "ru",
             "zho_Hans": "zh-CN"}
URL_PREFIX = {"eng_Latn": "en", "deu_Latn": "de", "fra_Latn": "fr", "spa_Latn": "es", "rus_Cyrl": "ru",
              "zho_Hans": "zh"}
LANGUAGE_NAME = {"eng_Latn": "English", "deu_Latn": "Deutsch", "fra_Latn": "Français", "spa_Latn": "Español",
                 "rus_Cyrl": "Русский", "zho_Hans": "中文"}


def page(title: str, *paragraphs: list[tuple[str, str]]) -> dict:
    return {"title": title, "paragraphs": [list(p) for p in paragraphs]}


# ---------------------------------------------------------------------------------------------------------------
# Boilerplate strings, per language.

UI = {
    "eng_Latn": {
        "skip": "Skip to main content", "home": "Home", "news": "News", "events": "Events", "about": "About us",
        "contact": "Contact", "search": "Search",
        "cookie": "We use cookies to make this website work and to understand how visitors use it.",
        "privacy": "Privacy policy", "accept": "Accept all", "necessary": "Only necessary cookies",
        "published": "Published on", "share": "Share this article", "print": "Print",
        "related": "More from the region", "newsletter": "Newsletter",
        "newsletter_text": "Get the latest news in your inbox every week.", "subscribe": "Subscribe",
        "rights": "All rights reserved.", "imprint": "Imprint", "accessibility": "Accessibility",
        "sitemap": "Sitemap", "phone": "Phone", "email": "Email", "languages": "Languages",
        "back_to_top": "Back to top",
    },
    "deu_Latn": {
        "skip": "Zum Hauptinhalt springen", "home": "Startseite", "news": "Aktuelles", "events": "Veranstaltungen",
        "about": "Über uns", "contact": "Kontakt", "search": "Suche",
        "cookie": "Wir verwenden Cookies, damit diese Website funktioniert und um zu verstehen, wie Besucher sie "
                  "nutzen.",
        "privacy": "Datenschutzerklärung", "accept": "Alle akzeptieren", "necessary": "Nur notwendige Cookies",
        "published": "Veröffentlicht am", "share": "Artikel teilen", "print": "Drucken",
        "related": "Mehr aus der Region", "newsletter": "Newsletter",
        "newsletter_text": "Die neuesten Nachrichten jede Woche in Ihrem Postfach.", "subscribe": "Abonnieren",
        "rights": "Alle Rechte vorbehalten.", "imprint": "Impressum", "accessibility": "Barrierefreiheit",
        "sitemap": "Sitemap", "phone": "Telefon", "email": "E-Mail", "languages": "Sprachen",
        "back_to_top": "Nach oben",
    },
    "fra_Latn": {
        "skip": "Aller au contenu principal", "home": "Accueil", "news": "Actualités", "events": "Agenda",
        "about": "Qui sommes-nous", "contact": "Contact", "search": "Rechercher",
        "cookie": "Nous utilisons des cookies pour faire fonctionner ce site et comprendre comment les visiteurs "
                  "l'utilisent.",
        "privacy": "Politique de confidentialité", "accept": "Tout accepter",
        "necessary": "Cookies nécessaires uniquement", "published": "Publié le", "share": "Partager cet article",
        "print": "Imprimer", "related": "À lire aussi dans la région", "newsletter": "Lettre d'information",
        "newsletter_text": "Recevez chaque semaine les dernières actualités dans votre boîte mail.",
        "subscribe": "S'abonner", "rights": "Tous droits réservés.", "imprint": "Mentions légales",
        "accessibility": "Accessibilité", "sitemap": "Plan du site", "phone": "Téléphone", "email": "Courriel",
        "languages": "Langues", "back_to_top": "Haut de page",
    },
    "spa_Latn": {
        "skip": "Saltar al contenido principal", "home": "Inicio", "news": "Noticias", "events": "Agenda",
        "about": "Quiénes somos", "contact": "Contacto", "search": "Buscar",
        "cookie": "Utilizamos cookies para que este sitio web funcione y para entender cómo lo usan los "
                  "visitantes.",
        "privacy": "Política de privacidad", "accept": "Aceptar todas", "necessary": "Solo cookies necesarias",
        "published": "Publicado el", "share": "Compartir este artículo", "print": "Imprimir",
        "related": "Más noticias de la región", "newsletter": "Boletín",
        "newsletter_text": "Recibe cada semana las últimas noticias en tu correo.", "subscribe": "Suscribirse",
        "rights": "Todos los derechos reservados.", "imprint": "Aviso legal", "accessibility": "Accesibilidad",
        "sitemap": "Mapa del sitio", "phone": "Teléfono", "email": "Correo electrónico", "languages": "Idiomas",
        "back_to_top": "Volver arriba",
    },
    "rus_Cyrl": {
        "skip": "Перейти к основному содержанию", "home": "Главная", "news": "Новости", "events": "Мероприятия",
        "about": "О нас", "contact": "Контакты", "search": "Поиск",
        "cookie": "Мы используем файлы cookie, чтобы сайт работал и чтобы понимать, как посетители им пользуются.",
        "privacy": "Политика конфиденциальности", "accept": "Принять все", "necessary": "Только необходимые",
        "published": "Опубликовано", "share": "Поделиться статьёй", "print": "Печать",
        "related": "Другие новости региона", "newsletter": "Рассылка",
        "newsletter_text": "Получайте свежие новости на почту каждую неделю.", "subscribe": "Подписаться",
        "rights": "Все права защищены.", "imprint": "Выходные данные", "accessibility": "Доступность",
        "sitemap": "Карта сайта", "phone": "Телефон", "email": "Эл. почта", "languages": "Языки",
        "back_to_top": "Наверх",
    },
    "zho_Hans": {
        "skip": "跳到主要内容", "home": "首页", "news": "新闻", "events": "活动", "about": "关于我们",
        "contact": "联系我们", "search": "搜索",
        "cookie": "我们使用Cookie来保证本网站正常运行，并了解访客如何使用本网站。",
        "privacy": "隐私政策", "accept": "全部接受", "necessary": "仅限必要Cookie", "published": "发布于",
        "share": "分享本文", "print": "打印", "related": "本地区更多资讯", "newsletter": "电子通讯",
        "newsletter_text": "每周将最新资讯发送到您的邮箱。", "subscribe": "订阅", "rights": "版权所有。",
        "imprint": "网站信息", "accessibility": "无障碍服务", "sitemap": "网站地图", "phone": "电话",
        "email": "电子邮箱", "languages": "语言", "back_to_top": "返回顶部",
    },
}

MONTHS = {
    "eng_Latn": ["January", "February", "March", "April", "May", "June", "July", "August", "September",
                 "October", "November", "December"],
    "deu_Latn": ["Januar", "Februar", "März", "April", "Mai", "Juni", "Juli", "August", "September", "Oktober",
                 "November", "Dezember"],
    "fra_Latn": ["janvier", "février", "mars", "avril", "mai", "juin", "juillet", "août", "septembre", "octobre",
                 "novembre", "décembre"],
    "spa_Latn": ["enero", "febrero", "marzo", "abril", "mayo", "junio", "julio", "agosto", "septiembre",
                 "octubre", "noviembre", "diciembre"],
    "rus_Cyrl": ["января", "февраля", "марта", "апреля", "мая", "июня", "июля", "августа", "сентября",
                 "октября", "ноября", "декабря"],  # genitive, as in dates
}


def format_date(language: str, iso: str) -> str:
    """'2024-04-15' as a page in `language` prints it."""
    year, month, day = (int(x) for x in iso.split("-"))
    if language == "zho_Hans":
        return f"{year}年{month}月{day}日"
    name = MONTHS[language][month - 1]
    return {
        "eng_Latn": f"{day} {name} {year}",
        "deu_Latn": f"{day}. {name} {year}",
        "fra_Latn": f"{day} {name} {year}",
        "spa_Latn": f"{day} de {name} de {year}",
        "rus_Cyrl": f"{day} {name} {year} г.",
    }[language]


# ---------------------------------------------------------------------------------------------------------------
# The stories. `charset` names the pages not served as UTF-8 (as much of the real web still is).

STORIES = [
    {
        "id": "library",
        "host": "www.belmora-library.example",
        "date": "2024-04-15",
        "site_name": {
            "eng_Latn": "Belmora City Library", "deu_Latn": "Stadtbibliothek Belmora",
            "fra_Latn": "Bibliothèque municipale de Belmora", "spa_Latn": "Biblioteca Municipal de Belmora",
            "rus_Cyrl": "Городская библиотека Бельморы", "zho_Hans": "贝尔莫拉市立图书馆",
        },
        "path": {
            "eng_Latn": "/en/news/2024/04/library-reopens-after-renovation",
            "deu_Latn": "/de/aktuelles/2024/04/bibliothek-nach-umbau-wiedereroeffnet",
            "fra_Latn": "/fr/actualites/2024/04/reouverture-de-la-bibliotheque",
            "spa_Latn": "/es/noticias/2024/04/reapertura-de-la-biblioteca",
            "rus_Cyrl": "/ru/novosti/2024/04/biblioteka-otkrylas-posle-remonta",
            "zho_Hans": "/zh/xinwen/2024/04/tushuguan-chongxin-kaifang",
        },
        # Declared in the HTTP header and in <meta charset>.
        "charset": {"deu_Latn": "windows-1252"},
        "pages": {
            "eng_Latn": page(
                "City library reopens after two years of renovation",
                [("c1", ("The Belmora City Library reopened its doors on Saturday after almost two years of "
                         "renovation work.")),
                 ("c2", ("More than 3,000 visitors came on the first day, according to the library's director, "
                         "Anna Kessler.")),
                 (OWN, "Many of them queued in the rain before the doors opened at ten o'clock.")],
                [("c3", "The building now has a new reading room on the top floor with space for 120 people."),
                 ("c4", ("The children's section has doubled in size and includes a small theatre for story "
                         "hours.")),
                 ("c5", ("The renovation cost 14 million euros and was paid for jointly by the city and the "
                         "regional government."))],
                [("c6", ("Opening hours have been extended, and the library is now also open on Sundays from noon "
                         "to six.")),
                 (OWN, ("Parking spaces are available in the garage on Mill Street, which is a five-minute walk "
                        "away.")),
                 ("c7", "Membership remains free for all residents under eighteen years of age.")],
            ),
            "deu_Latn": page(
                "Stadtbibliothek öffnet nach zwei Jahren Umbau wieder",
                [("c1", ("Die Stadtbibliothek Belmora hat am Samstag nach fast zwei Jahren Umbauarbeiten wieder "
                         "ihre Türen geöffnet.")),
                 ("c2", ("Nach Angaben der Bibliotheksdirektorin Anna Kessler kamen am ersten Tag mehr als 3.000 "
                         "Besucher.")),
                 (OWN, "Zur Eröffnung spielte das Jugendorchester der städtischen Musikschule im Foyer.")],
                [("c3", ("Das Gebäude hat nun im obersten Stockwerk einen neuen Lesesaal mit Platz für 120 "
                         "Personen.")),
                 ("c4", ("Die Kinderabteilung ist doppelt so groß wie zuvor und verfügt über ein kleines Theater "
                         "für Vorlesestunden.")),
                 (OWN, "Die alte Leseecke im Erdgeschoss wurde zu einem kleinen Café umgebaut."),
                 ("c5", ("Der Umbau kostete 14 Millionen Euro und wurde von der Stadt und der Landesregierung "
                         "gemeinsam bezahlt."))],
                [("c6", ("Die Öffnungszeiten wurden verlängert, und die Bibliothek ist jetzt auch sonntags von "
                         "zwölf bis achtzehn Uhr geöffnet.")),
                 ("c7", "Die Mitgliedschaft bleibt für alle Einwohner unter achtzehn Jahren kostenlos.")],
            ),
            "fra_Latn": page(
                "La bibliothèque municipale rouvre après deux ans de travaux",
                [("c1", ("La bibliothèque municipale de Belmora a rouvert ses portes samedi après près de deux ans "
                         "de travaux de rénovation.")),
                 ("c2", ("Plus de 3 000 visiteurs sont venus le premier jour, selon la directrice de la "
                         "bibliothèque, Anna Kessler."))],
                [("c3", ("Le bâtiment dispose désormais d'une nouvelle salle de lecture au dernier étage, qui peut "
                         "accueillir 120 personnes.")),
                 ("c4", ("L'espace jeunesse a doublé de taille et comprend un petit théâtre pour l'heure du "
                         "conte.")),
                 ("c5", ("La rénovation a coûté 14 millions d'euros, financés conjointement par la ville et le "
                         "gouvernement régional.")),
                 (OWN, "Une exposition de photos retrace l'histoire du bâtiment, construit en 1911.")],
                [("c6", ("Les horaires d'ouverture ont été élargis, et la bibliothèque est désormais ouverte le "
                         "dimanche de midi à 18 heures.")),
                 ("c7", "L'inscription reste gratuite pour tous les habitants de moins de dix-huit ans.")],
            ),
            "spa_Latn": page(
                "La biblioteca municipal reabre tras dos años de obras",
                [("c1", ("La Biblioteca Municipal de Belmora reabrió sus puertas el sábado tras casi dos años de "
                         "obras de renovación.")),
                 ("c2", ("Más de 3.000 visitantes acudieron el primer día, según la directora de la biblioteca, "
                         "Anna Kessler."))],
                [("c3", ("El edificio cuenta ahora con una nueva sala de lectura en la última planta con capacidad "
                         "para 120 personas.")),
                 ("c4", ("La sección infantil ha duplicado su tamaño e incluye un pequeño teatro para la hora del "
                         "cuento.")),
                 ("c5", ("La renovación costó 14 millones de euros y fue financiada conjuntamente por la ciudad y "
                         "el gobierno regional."))],
                [(OWN, ("La biblioteca también ofrece ahora cursos de español para adultos los martes por la "
                        "tarde.")),
                 ("c7", ("La inscripción sigue siendo gratuita para todos los residentes menores de dieciocho "
                         "años.")),
                 (OWN, "Los lectores pueden devolver los libros las 24 horas en un buzón junto a la entrada.")],
            ),
            "rus_Cyrl": page(
                "Городская библиотека вновь открылась после двух лет ремонта",
                [("c1", ("В субботу городская библиотека Бельморы вновь открыла свои двери после почти двух лет "
                         "ремонтных работ.")),
                 ("c2", ("По словам директора библиотеки Анны Кесслер, в первый день её посетили более 3000 "
                         "человек.")),
                 (OWN, "На церемонии открытия выступил детский хор местной музыкальной школы.")],
                [("c3", "Теперь на верхнем этаже здания есть новый читальный зал на 120 мест."),
                 ("c4", "Детский отдел стал вдвое больше, и в нём появился небольшой театр для чтения сказок."),
                 ("c5", ("Ремонт обошёлся в 14 миллионов евро и был оплачен совместно городом и региональным "
                         "правительством."))],
                [("c6", ("Часы работы продлены, и теперь библиотека открыта также по воскресеньям с полудня до "
                         "шести часов вечера.")),
                 ("c7", "Для всех жителей младше восемнадцати лет запись в библиотеку по-прежнему бесплатна.")],
            ),
            "zho_Hans": page(
                "市图书馆经过两年翻修后重新开放",
                [("c1", "贝尔莫拉市立图书馆在经过近两年的翻修后，于周六重新开放。"),
                 ("c2", "据图书馆馆长安娜·凯斯勒介绍，开放首日有超过3000名访客到馆。")],
                [("c3", "大楼顶层新设了一间阅览室，可容纳120人。"),
                 ("c4", "少儿区面积扩大了一倍，还设有一个用于讲故事活动的小剧场。"),
                 ("c5", "此次翻修耗资1400万欧元，由市政府和地区政府共同出资。"),
                 (OWN, "馆内还新增了自助借还书机，读者可以自行办理借阅手续。")],
                [("c6", "图书馆延长了开放时间，现在周日中午至下午六点也对外开放。"),
                 ("c7", "所有未满十八岁的居民仍可免费成为图书馆会员。")],
            ),
        },
    },
    {
        "id": "railway",
        "host": "www.regiorail-belmora.example",
        "date": "2024-05-06",
        "site_name": {lang: "RegioRail Belmora" for lang in LANGUAGES},
        "path": {
            "eng_Latn": "/en/news/new-line-belmora-lindavik",
            "deu_Latn": "/de/aktuelles/neue-linie-belmora-lindavik",
            "fra_Latn": "/fr/actualites/nouvelle-ligne-belmora-lindavik",
            "spa_Latn": "/es/noticias/nueva-linea-belmora-lindavik",
            "rus_Cyrl": "/ru/novosti/novaya-liniya-belmora-lindavik",
            "zho_Hans": "/zh/xinwen/belmora-lindavik-xinxian",
        },
        "charset": {},
        "pages": {
            "eng_Latn": page(
                "New regional train line links Belmora and Lindavik",
                [("c1", "A new regional train line between Belmora and Lindavik will open on the first of June."),
                 ("c2", "Trains will run every thirty minutes on weekdays and every hour at weekends."),
                 ("c3", "The journey will take 42 minutes, about twenty minutes less than by car.")],
                [(OWN, "The line was first proposed more than fifteen years ago by a group of commuters."),
                 ("c4", ("The railway company has bought eight new electric trains, each with room for 250 "
                         "passengers.")),
                 ("c5", "Every train has space for twelve bicycles and a level entrance for wheelchairs.")],
                [("c6", "A single ticket will cost 4.80 euros, and a monthly pass will cost 65 euros."),
                 ("c7", "During the first week, all passengers can travel on the new line free of charge."),
                 (OWN, "The station car parks in Lindavik will be extended later this year.")],
            ),
            "deu_Latn": page(
                "Neue Regionalbahn verbindet Belmora und Lindavik",
                [("c1", ("Eine neue Regionalbahnlinie zwischen Belmora und Lindavik wird am ersten Juni "
                         "eröffnet.")),
                 ("c2", "Die Züge fahren werktags alle dreißig Minuten und am Wochenende stündlich."),
                 ("c3", "Die Fahrt dauert 42 Minuten und damit etwa zwanzig Minuten weniger als mit dem Auto.")],
                [("c4", ("Die Bahngesellschaft hat acht neue Elektrozüge gekauft, die jeweils Platz für 250 "
                         "Fahrgäste bieten.")),
                 ("c5", ("Jeder Zug hat Platz für zwölf Fahrräder und einen stufenlosen Einstieg für "
                         "Rollstühle.")),
                 (OWN, "Die Bahnhöfe entlang der Strecke erhalten neue Fahrradständer und Anzeigetafeln.")],
                [("c6", "Eine Einzelfahrt kostet 4,80 Euro, eine Monatskarte 65 Euro."),
                 (OWN, "Im Juli beginnen außerdem die Bauarbeiten für einen zusätzlichen Halt in Ostfeld.")],
            ),
            "fra_Latn": page(
                "Une nouvelle ligne régionale relie Belmora et Lindavik",
                [("c1", "Une nouvelle ligne de train régionale entre Belmora et Lindavik ouvrira le 1er juin."),
                 ("c2", ("Les trains circuleront toutes les trente minutes en semaine et toutes les heures le "
                         "week-end.")),
                 ("c3", "Le trajet durera 42 minutes, soit environ vingt minutes de moins qu'en voiture.")],
                [("c4", ("La compagnie ferroviaire a acheté huit nouveaux trains électriques pouvant chacun "
                         "transporter 250 passagers.")),
                 (OWN, "Les horaires détaillés seront publiés sur notre site à la mi-mai.")],
                [("c6", "Un billet simple coûtera 4,80 euros et un abonnement mensuel 65 euros."),
                 ("c7", ("Pendant la première semaine, tous les voyageurs pourront emprunter la nouvelle ligne "
                         "gratuitement."))],
            ),
            "spa_Latn": page(
                "Una nueva línea regional une Belmora y Lindavik",
                [("c1", "Una nueva línea de tren regional entre Belmora y Lindavik se inaugurará el 1 de junio."),
                 ("c2", ("Los trenes circularán cada treinta minutos entre semana y cada hora los fines de "
                         "semana.")),
                 ("c3", "El trayecto durará 42 minutos, unos veinte minutos menos que en coche.")],
                [("c4", ("La compañía ferroviaria ha comprado ocho trenes eléctricos nuevos, cada uno con "
                         "capacidad para 250 pasajeros.")),
                 ("c5", ("Cada tren tiene espacio para doce bicicletas y un acceso a nivel para sillas de "
                         "ruedas.")),
                 (OWN, "Las obras de la línea dieron trabajo a más de 400 personas de la región.")],
                [("c6", "Un billete sencillo costará 4,80 euros y un abono mensual, 65 euros."),
                 ("c7", ("Durante la primera semana, todos los pasajeros podrán viajar gratis en la nueva "
                         "línea."))],
            ),
            "rus_Cyrl": page(
                "Новая региональная железнодорожная линия свяжет Бельмору и Линдавик",
                [("c1", ("Первого июня откроется новая региональная железнодорожная линия между Бельморой и "
                         "Линдавиком.")),
                 ("c2", "По будням поезда будут ходить каждые тридцать минут, а по выходным раз в час."),
                 ("c3", "Поездка займёт 42 минуты, примерно на двадцать минут меньше, чем на машине.")],
                [("c4", ("Железнодорожная компания закупила восемь новых электропоездов, каждый из которых "
                         "вмещает 250 пассажиров.")),
                 ("c5", ("В каждом поезде есть места для двенадцати велосипедов и вход без ступенек для "
                         "инвалидных колясок.")),
                 (OWN, "Билеты можно будет купить в автоматах на станциях или в мобильном приложении.")],
                [("c7", "В течение первой недели все пассажиры смогут ездить по новой линии бесплатно."),
                 (OWN, "Расписание поездов согласовано с автобусными маршрутами в Линдавике.")],
            ),
            "zho_Hans": page(
                "新区域铁路线连接贝尔莫拉和林达维克",
                [("c1", "贝尔莫拉与林达维克之间的一条新区域铁路线将于6月1日开通。"),
                 ("c2", "列车在工作日每三十分钟一班，周末每小时一班。"),
                 ("c3", "全程需时42分钟，比开车节省约二十分钟。")],
                [("c4", "铁路公司购买了八列新的电动列车，每列可载客250人。"),
                 ("c5", "每列火车可停放十二辆自行车，并设有方便轮椅进出的无台阶入口。"),
                 (OWN, "沿线车站还将增设电子显示屏，实时公布列车到站信息。")],
                [("c6", "单程票价为4.80欧元，月票为65欧元。"),
                 ("c7", "开通后第一周，所有乘客均可免费乘坐新线路。")],
            ),
        },
    },
    {
        "id": "museum",
        "host": "www.belmora-sciencemuseum.example",
        "date": "2024-09-20",
        "site_name": {
            "eng_Latn": "Belmora Science Museum", "deu_Latn": "Wissenschaftsmuseum Belmora",
            "fra_Latn": "Musée des sciences de Belmora", "spa_Latn": "Museo de la Ciencia de Belmora",
            "rus_Cyrl": "Музей науки Бельморы", "zho_Hans": "贝尔莫拉科学博物馆",
        },
        "path": {
            "eng_Latn": "/en/exhibitions/deep-sea",
            "deu_Latn": "/de/ausstellungen/tiefsee",
            "fra_Latn": "/fr/expositions/grands-fonds",
            "spa_Latn": "/es/exposiciones/profundidades-marinas",
            "rus_Cyrl": "/ru/vystavki/glubiny-okeana",
            "zho_Hans": "/zh/zhanlan/shenhai",
        },
        "charset": {},
        "pages": {
            "eng_Latn": page(
                "New exhibition takes visitors into the deep sea",
                [("c1", ("The Belmora Science Museum opens a new exhibition about life in the deep sea next "
                         "Friday.")),
                 ("c2", ("It shows more than 200 animals from depths of up to 6,000 metres, many of them preserved "
                         "in glass cases.")),
                 (OWN, "The museum's marine biology team spent three years preparing the exhibition.")],
                [("c3", ("At the centre of the exhibition is the skeleton of a sperm whale that is almost fifteen "
                         "metres long.")),
                 ("c4", "In a dark room, visitors can see how some fish produce their own light."),
                 ("c5", ("A model of a research submarine lets children sit at the controls and explore the ocean "
                         "floor on screens."))],
                [("c6", "The exhibition will run until the end of January next year."),
                 (OWN, "Guided tours for school classes can be booked by telephone from Monday."),
                 ("c7", "Tickets cost 12 euros for adults, while children under six get in free.")],
            ),
            "deu_Latn": page(
                "Neue Ausstellung entführt in die Tiefsee",
                [("c1", ("Das Wissenschaftsmuseum Belmora eröffnet am kommenden Freitag eine neue Ausstellung über "
                         "das Leben in der Tiefsee.")),
                 ("c2", ("Sie zeigt mehr als 200 Tiere aus bis zu 6.000 Metern Tiefe, viele davon in Glasvitrinen "
                         "konserviert."))],
                [("c3", ("Im Mittelpunkt der Ausstellung steht das fast fünfzehn Meter lange Skelett eines "
                         "Pottwals.")),
                 ("c4", ("In einem dunklen Raum können die Besucher sehen, wie manche Fische ihr eigenes Licht "
                         "erzeugen.")),
                 ("c5", ("In einem Modell eines Forschungs-U-Boots können Kinder am Steuer sitzen und auf "
                         "Bildschirmen den Meeresboden erkunden."))],
                [("c6", "Die Ausstellung ist bis Ende Januar nächsten Jahres zu sehen."),
                 ("c7", ("Der Eintritt kostet für Erwachsene 12 Euro, Kinder unter sechs Jahren haben freien "
                         "Eintritt.")),
                 (OWN, "Begleitend gibt es eine Vortragsreihe mit Meeresforschern aus Kiel und Bremerhaven.")],
            ),
            "fra_Latn": page(
                "Une nouvelle exposition plonge les visiteurs dans les grands fonds",
                [("c1", ("Le musée des sciences de Belmora inaugure vendredi prochain une nouvelle exposition sur "
                         "la vie dans les grands fonds marins.")),
                 ("c2", ("Elle présente plus de 200 animaux venus de profondeurs allant jusqu'à 6 000 mètres, dont "
                         "beaucoup sont conservés dans des vitrines.")),
                 (OWN, ("Le musée a travaillé avec des chercheurs de l'université de Brest pour préparer cette "
                        "exposition."))],
                [("c3", ("Au cœur de l'exposition se trouve le squelette d'un cachalot de près de quinze mètres de "
                         "long.")),
                 ("c4", ("Dans une salle obscure, les visiteurs peuvent découvrir comment certains poissons "
                         "produisent leur propre lumière.")),
                 ("c5", ("Une maquette de sous-marin de recherche permet aux enfants de s'asseoir aux commandes et "
                         "d'explorer le fond de l'océan sur des écrans."))],
                [("c6", "L'exposition est visible jusqu'à la fin du mois de janvier de l'année prochaine."),
                 (OWN, "Un audioguide en six langues est disponible à l'accueil du musée.")],
            ),
            "spa_Latn": page(
                "Una nueva exposición lleva a los visitantes a las profundidades del mar",
                [("c1", ("El Museo de la Ciencia de Belmora inaugura el próximo viernes una nueva exposición "
                         "sobre la vida en las profundidades marinas.")),
                 ("c2", ("Muestra más de 200 animales procedentes de hasta 6.000 metros de profundidad, muchos de "
                         "ellos conservados en vitrinas."))],
                [("c3", ("En el centro de la exposición se encuentra el esqueleto de un cachalote de casi quince "
                         "metros de largo.")),
                 ("c5", ("Una maqueta de un submarino de investigación permite a los niños sentarse a los mandos "
                         "y explorar el fondo del océano en pantallas."))],
                [("c6", "La exposición podrá visitarse hasta finales de enero del año que viene."),
                 ("c7", ("La entrada cuesta 12 euros para los adultos, y los niños menores de seis años entran "
                         "gratis.")),
                 (OWN, ("Los miércoles por la tarde, la entrada es gratuita para los estudiantes "
                        "universitarios."))],
            ),
            "rus_Cyrl": page(
                "Новая выставка приглашает посетителей в глубины океана",
                [("c1", ("В следующую пятницу в Музее науки Бельморы откроется новая выставка о жизни в глубинах "
                         "моря.")),
                 ("c2", ("На ней представлено более 200 животных с глубин до 6000 метров, многие из них хранятся "
                         "в стеклянных витринах."))],
                [("c3", "В центре экспозиции находится скелет кашалота длиной почти пятнадцать метров."),
                 ("c4", "В тёмном зале посетители могут увидеть, как некоторые рыбы излучают собственный свет."),
                 (OWN, ("Для посетителей с нарушениями зрения подготовлены тактильные модели некоторых "
                        "животных.")),
                 ("c5", ("В модели исследовательской подводной лодки дети могут сесть за пульт управления и "
                         "исследовать океанское дно на экранах."))],
                [("c6", "Выставка продлится до конца января следующего года."),
                 ("c7", "Билет для взрослых стоит 12 евро, а дети до шести лет проходят бесплатно.")],
            ),
            "zho_Hans": page(
                "新展览带观众探索深海世界",
                [("c1", "贝尔莫拉科学博物馆将于下周五推出一个关于深海生物的新展览。"),
                 ("c2", "展览展出了来自深达6000米海域的200多只动物，其中许多被保存在玻璃展柜中。")],
                [("c3", "展览的核心展品是一具长近十五米的抹香鲸骨架。"),
                 ("c4", "在一个黑暗的展厅里，观众可以看到一些鱼类如何自己发光。"),
                 ("c5", "在一个科考潜艇模型中，孩子们可以坐在操纵台前，通过屏幕探索海底。")],
                [("c6", "本次展览将一直持续到明年一月底。"),
                 ("c7", "成人票价为12欧元，六岁以下儿童免费入场。"),
                 (OWN, "博物馆商店还出售以深海生物为主题的图书和玩具。")],
            ),
        },
    },
    {
        "id": "recipe",
        "host": "www.kitchen-notes.example",
        "date": "2024-11-08",
        "site_name": {lang: "Kitchen Notes" for lang in LANGUAGES},
        "path": {
            "eng_Latn": "/en/recipes/red-lentil-soup",
            "deu_Latn": "/de/rezepte/rote-linsensuppe",
            "fra_Latn": "/fr/recettes/soupe-lentilles-corail",
            "spa_Latn": "/es/recetas/sopa-de-lentejas-rojas",
            "rus_Cyrl": "/ru/recepty/sup-iz-krasnoy-chechevitsy",
            "zho_Hans": "/zh/caipu/hong-biandou-tang",
        },
        # Declared only in <meta charset>, as many Chinese sites still do; the HTTP header says text/html.
        "charset": {"zho_Hans": "gb2312"},
        "pages": {
            "eng_Latn": page(
                "A warming red lentil soup for cold evenings",
                [("c1", ("This red lentil soup is ready in thirty minutes and needs only a few simple "
                         "ingredients.")),
                 (OWN, "My grandmother used to make it every Friday when we came home from school."),
                 ("c2", "First, chop one onion, two carrots and two cloves of garlic into small pieces.")],
                [("c3", ("Fry the vegetables in a little olive oil for five minutes, then add a teaspoon of ground "
                         "cumin.")),
                 ("c4", ("Add 250 grams of red lentils and one litre of vegetable stock, and bring everything to "
                         "the boil.")),
                 ("c5", "Let the soup simmer gently for about twenty minutes, until the lentils are soft.")],
                [("c6", ("Finally, blend the soup until smooth and season it with salt, pepper and a squeeze of "
                         "lemon juice.")),
                 ("c7", "The soup keeps in the fridge for three days and can also be frozen."),
                 (OWN, "Let us know in the comments how your soup turned out.")],
            ),
            "deu_Latn": page(
                "Wärmende Suppe aus roten Linsen für kalte Abende",
                [("c1", ("Diese Suppe aus roten Linsen ist in dreißig Minuten fertig und braucht nur wenige "
                         "einfache Zutaten.")),
                 ("c2", "Zuerst eine Zwiebel, zwei Karotten und zwei Knoblauchzehen klein schneiden.")],
                [("c3", ("Das Gemüse fünf Minuten in etwas Olivenöl anbraten und dann einen Teelöffel gemahlenen "
                         "Kreuzkümmel hinzufügen.")),
                 ("c4", ("250 Gramm rote Linsen und einen Liter Gemüsebrühe dazugeben und alles zum Kochen "
                         "bringen.")),
                 ("c5", "Die Suppe etwa zwanzig Minuten leise köcheln lassen, bis die Linsen weich sind.")],
                [("c6", ("Zum Schluss die Suppe fein pürieren und mit Salz, Pfeffer und einem Spritzer "
                         "Zitronensaft abschmecken.")),
                 (OWN, "Dazu passt frisches Fladenbrot oder ein Klecks Joghurt mit Minze."),
                 ("c7", "Im Kühlschrank hält sich die Suppe drei Tage, sie lässt sich aber auch einfrieren.")],
            ),
            "fra_Latn": page(
                "Une soupe de lentilles corail réconfortante pour les soirées froides",
                [("c1", ("Cette soupe de lentilles corail est prête en trente minutes et ne demande que quelques "
                         "ingrédients simples.")),
                 ("c2", ("Commencez par couper en petits morceaux un oignon, deux carottes et deux gousses "
                         "d'ail."))],
                [("c3", ("Faites revenir les légumes dans un peu d'huile d'olive pendant cinq minutes, puis "
                         "ajoutez une cuillère à café de cumin moulu.")),
                 ("c4", ("Ajoutez 250 grammes de lentilles corail et un litre de bouillon de légumes, puis portez "
                         "le tout à ébullition.")),
                 ("c5", ("Laissez mijoter la soupe à feu doux pendant une vingtaine de minutes, jusqu'à ce que les "
                         "lentilles soient tendres.")),
                 (OWN, "Pour une version plus riche, ajoutez un peu de lait de coco en fin de cuisson.")],
                [("c6", ("Pour finir, mixez la soupe jusqu'à obtenir une texture lisse et assaisonnez-la de sel, "
                         "de poivre et d'un filet de jus de citron.")),
                 ("c7", "La soupe se conserve trois jours au réfrigérateur et peut aussi être congelée."),
                 (OWN, "Cette recette convient aussi aux personnes qui suivent un régime végétalien.")],
            ),
            "spa_Latn": page(
                "Una reconfortante sopa de lentejas rojas para las noches frías",
                [("c1", ("Esta sopa de lentejas rojas está lista en treinta minutos y solo necesita unos pocos "
                         "ingredientes sencillos.")),
                 ("c2", "Primero, pica en trozos pequeños una cebolla, dos zanahorias y dos dientes de ajo.")],
                [("c3", ("Sofríe las verduras en un poco de aceite de oliva durante cinco minutos y luego añade "
                         "una cucharadita de comino molido.")),
                 ("c4", ("Incorpora 250 gramos de lentejas rojas y un litro de caldo de verduras, y lleva todo a "
                         "ebullición.")),
                 ("c5", ("Deja que la sopa hierva a fuego lento unos veinte minutos, hasta que las lentejas estén "
                         "blandas."))],
                [("c6", ("Por último, tritura la sopa hasta que quede fina y sazónala con sal, pimienta y un "
                         "chorrito de zumo de limón.")),
                 ("c7", "La sopa se conserva tres días en la nevera y también se puede congelar."),
                 (OWN, "En mi casa la servimos siempre con pan tostado y un buen chorro de aceite de oliva.")],
            ),
            "rus_Cyrl": page(
                "Согревающий суп из красной чечевицы для холодных вечеров",
                [("c1", ("Этот суп из красной чечевицы готовится за тридцать минут, и для него нужно всего "
                         "несколько простых продуктов.")),
                 ("c2", "Сначала мелко нарежьте одну луковицу, две моркови и два зубчика чеснока.")],
                [("c3", ("Обжарьте овощи на небольшом количестве оливкового масла в течение пяти минут, затем "
                         "добавьте чайную ложку молотого кумина.")),
                 (OWN, "Вместо кумина можно использовать немного копчёной паприки."),
                 ("c4", ("Добавьте 250 граммов красной чечевицы и литр овощного бульона и доведите всё до "
                         "кипения.")),
                 ("c5", "Варите суп на слабом огне около двадцати минут, пока чечевица не станет мягкой.")],
                [("c6", ("В конце измельчите суп блендером до однородности и приправьте солью, перцем и "
                         "несколькими каплями лимонного сока.")),
                 (OWN, "Подавайте суп горячим со свежим хлебом и зеленью.")],
            ),
            "zho_Hans": page(
                "寒夜里的一碗暖心红扁豆汤",
                [("c1", "这道红扁豆汤只需三十分钟就能做好，而且只需要几种简单的食材。"),
                 ("c2", "首先，将一个洋葱、两根胡萝卜和两瓣大蒜切成小块。")],
                [("c3", "用少许橄榄油将蔬菜翻炒五分钟，然后加入一茶匙孜然粉。"),
                 ("c4", "加入250克红扁豆和一升蔬菜高汤，大火煮沸。"),
                 (OWN, "喜欢吃辣的朋友可以在出锅前撒上一些辣椒粉。")],
                [("c6", "最后，用搅拌机将汤打至顺滑，再加入盐、胡椒和少许柠檬汁调味。"),
                 ("c7", "汤在冰箱中可以保存三天，也可以冷冻保存。")],
            ),
        },
    },
    {
        "id": "cranes",
        "host": "www.lake-varen-reserve.example",
        "date": "2024-02-27",
        "site_name": {
            "eng_Latn": "Lake Varen Nature Reserve", "deu_Latn": "Naturschutzgebiet Varensee",
            "fra_Latn": "Réserve naturelle du lac Varen", "spa_Latn": "Reserva Natural del Lago Varen",
            "rus_Cyrl": "Заповедник «Озеро Варен»", "zho_Hans": "瓦伦湖自然保护区",
        },
        "path": {
            "eng_Latn": "/en/news/2024/cranes-return-early",
            "deu_Latn": "/de/aktuelles/2024/kraniche-kehren-frueh-zurueck",
            "fra_Latn": "/fr/actualites/2024/retour-precoce-des-grues",
            "spa_Latn": "/es/noticias/2024/regreso-temprano-de-las-grullas",
            "rus_Cyrl": "/ru/novosti/2024/rannee-vozvrashchenie-zhuravley",
            "zho_Hans": "/zh/xinwen/2024/huihe-tiqian-feihui",
        },
        "charset": {},
        "pages": {
            "eng_Latn": page(
                "Cranes return early to Lake Varen after a mild winter",
                [("c1", ("The first cranes have returned to the nature reserve at Lake Varen, almost three weeks "
                         "earlier than usual.")),
                 ("c2", ("Rangers counted about 1,500 birds on the wet meadows along the northern shore on Tuesday "
                         "morning.")),
                 ("c3", "Experts believe the mild winter is the main reason for the early return.")],
                [(OWN, "Last year the first flocks were not seen until the middle of March."),
                 ("c4", ("The cranes rest at the lake for several weeks before flying on to their breeding grounds "
                         "in the north.")),
                 ("c5", "Visitors are asked to stay on the marked paths and to keep dogs on a lead.")],
                [("c6", ("The best time to watch the birds is early in the morning, when they leave their sleeping "
                         "places in the water.")),
                 ("c7", "The observation tower on the eastern shore is open every day from sunrise to sunset."),
                 (OWN, "Binoculars can be borrowed free of charge at the visitor centre.")],
            ),
            "deu_Latn": page(
                "Kraniche kehren nach mildem Winter früh an den Varensee zurück",
                [("c1", ("Die ersten Kraniche sind in das Naturschutzgebiet am Varensee zurückgekehrt, fast drei "
                         "Wochen früher als sonst.")),
                 ("c2", ("Die Ranger zählten am Dienstagmorgen rund 1.500 Vögel auf den feuchten Wiesen am "
                         "Nordufer.")),
                 ("c3", "Fachleute halten den milden Winter für den Hauptgrund für die frühe Rückkehr.")],
                [("c4", ("Die Kraniche rasten mehrere Wochen am See, bevor sie zu ihren Brutgebieten im Norden "
                         "weiterfliegen.")),
                 ("c5", ("Besucher werden gebeten, auf den markierten Wegen zu bleiben und Hunde an der Leine zu "
                         "führen."))],
                [("c7", ("Der Aussichtsturm am Ostufer ist täglich von Sonnenaufgang bis Sonnenuntergang "
                         "geöffnet.")),
                 (OWN, ("Am Samstag bietet der örtliche Naturschutzverein eine geführte Wanderung rund um den See "
                        "an."))],
            ),
            "fra_Latn": page(
                "Les grues reviennent tôt au lac Varen après un hiver doux",
                [("c1", ("Les premières grues sont revenues dans la réserve naturelle du lac Varen, près de trois "
                         "semaines plus tôt que d'habitude.")),
                 ("c2", ("Mardi matin, les gardes ont compté environ 1 500 oiseaux dans les prairies humides le "
                         "long de la rive nord.")),
                 ("c3", "Les experts estiment que l'hiver doux est la principale raison de ce retour précoce.")],
                [("c4", ("Les grues font une halte de plusieurs semaines au lac avant de repartir vers leurs zones "
                         "de reproduction dans le nord.")),
                 ("c5", ("Les visiteurs sont priés de rester sur les sentiers balisés et de tenir leurs chiens en "
                         "laisse."))],
                [("c6", ("Le meilleur moment pour observer les oiseaux est tôt le matin, lorsqu'ils quittent leurs "
                         "dortoirs dans l'eau.")),
                 ("c7", ("La tour d'observation située sur la rive orientale est ouverte tous les jours, du lever "
                         "au coucher du soleil.")),
                 (OWN, "Une sortie guidée en français est proposée chaque dimanche à neuf heures.")],
            ),
            "spa_Latn": page(
                "Las grullas regresan pronto al lago Varen tras un invierno suave",
                [("c1", ("Las primeras grullas han vuelto a la reserva natural del lago Varen, casi tres semanas "
                         "antes de lo habitual.")),
                 ("c2", ("Los guardas contaron el martes por la mañana unas 1.500 aves en los prados húmedos de la "
                         "orilla norte.")),
                 ("c3", ("Los expertos creen que el invierno suave es la principal razón de este regreso "
                         "temprano."))],
                [("c4", ("Las grullas descansan varias semanas en el lago antes de seguir volando hacia sus zonas "
                         "de cría en el norte.")),
                 (OWN, "En la reserva viven también nutrias, garzas y varias especies de ranas."),
                 ("c5", ("Se ruega a los visitantes que no se salgan de los caminos señalizados y que lleven a los "
                         "perros atados."))],
                [("c6", ("El mejor momento para observar las aves es a primera hora de la mañana, cuando abandonan "
                         "sus dormideros en el agua.")),
                 (OWN, "El aparcamiento junto al centro de visitantes cuesta tres euros al día.")],
            ),
            "rus_Cyrl": page(
                "После мягкой зимы журавли рано вернулись на озеро Варен",
                [("c1", ("Первые журавли вернулись в заповедник на озере Варен почти на три недели раньше "
                         "обычного.")),
                 ("c2", ("Во вторник утром сотрудники заповедника насчитали около 1500 птиц на влажных лугах у "
                         "северного берега.")),
                 ("c3", "Специалисты считают, что главная причина раннего возвращения — мягкая зима.")],
                [("c4", ("Журавли отдыхают на озере несколько недель, прежде чем лететь дальше к местам "
                         "гнездования на севере.")),
                 ("c5", "Посетителей просят не сходить с обозначенных троп и держать собак на поводке."),
                 (OWN, "В этом году у озера впервые за долгое время заметили пару чёрных аистов.")],
                [("c6", ("Лучше всего наблюдать за птицами рано утром, когда они покидают места ночёвки на "
                         "воде.")),
                 ("c7", "Смотровая башня на восточном берегу открыта ежедневно от восхода до заката солнца.")],
            ),
            "zho_Hans": page(
                "暖冬过后，灰鹤提前飞回瓦伦湖",
                [("c1", "首批灰鹤已经飞回瓦伦湖自然保护区，比往年提早了近三周。"),
                 ("c2", "周二上午，保护区工作人员在北岸的湿润草地上数到了约1500只鸟。"),
                 ("c3", "专家认为，暖冬是灰鹤提前归来的主要原因。")],
                [("c4", "灰鹤会在湖边停留数周，然后继续飞往北方的繁殖地。"),
                 ("c5", "保护区请游客不要离开已标记的步道，并用牵引绳拴好自己的狗。"),
                 (OWN, "保护区游客中心还为小朋友准备了关于候鸟迁徙的互动展览。")],
                [("c6", "观鸟的最佳时间是清晨，那时鹤群会离开它们在水中的夜栖地。"),
                 (OWN, "今年春天的第一场观鸟讲座将于三月初举行。")],
            ),
        },
    },
]
