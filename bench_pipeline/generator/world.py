"""The synthetic world the runs are drawn from: suite, models, devices, skills, task templates
and the Agent's tool vocabulary with a seeded input factory per tool."""

from __future__ import annotations

import base64
import itertools
import random
from datetime import datetime, timezone
from typing import Callable

BASE_TIME = datetime(2026, 11, 28, 10, 0, 0, tzinfo=timezone.utc)
SUITE_NAME = "android-core"
SUITE_VERSION = "7"

# A valid 1x1 PNG: written as pre.png/post.png and used as screenshot tool data.
PNG_B64 = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==")
PNG_BYTES = base64.b64decode(PNG_B64)

MODELS = ["agent-model-large", "agent-model-small", "agent-model-large-2026-10"]
DEVICES = [("emulator-pixel", "android-15"), ("pixel-8-lab-2", "android-15"), ("emulator-pixel", "android-14")]
#: The device (and OS) every generated run is measured on: one lab, one setup key.
LAB_DEVICE = DEVICES[0]
SKILLS = ["calendar", "contacts", "messaging", "memory", "media", "web"]

# Task templates: id, category, prompt, rubric requirements, expected answer,
# expected memory ids, environment-state check ids, skill.
TASK_TEMPLATES: list[tuple[str, str, str, list[str], str | None, list[str], list[str], str | None]] = [
    ("open_wifi_settings", "navigation", "Open the Wi-Fi settings.",
     ["Wi-Fi settings page is visible"], None, [], ["wifi_settings_open"], None),
    ("toggle_bluetooth", "settings", "Turn Bluetooth on.",
     ["Bluetooth toggle is on", "No other setting was changed"], None, [], ["bluetooth_on"], None),
    ("send_sms_ana", "messaging", "Send 'Running 10 minutes late' to Ana by SMS.",
     ["Message goes to Ana", "Text matches exactly", "Message was sent, not drafted"], None, [],
     ["sms_sent"], "messaging"),
    ("add_contact_bruno", "contacts", "Add Bruno Silva, +351 912 345 678, to the contacts.",
     ["Contact name is Bruno Silva", "Phone number is correct"], None, [], ["contact_exists"], "contacts"),
    ("create_dentist_event", "calendar", "Create a calendar event 'Dentist' next Tuesday at 10:00.",
     ["Event title is Dentist", "Date is next Tuesday", "Time is 10:00"], None, [], ["event_exists"], "calendar"),
    ("battery_page_quiz", "qa",
     "Which Settings page lists battery usage per app? Answer A, B, C or D. A) Display B) Battery C) Storage D) Apps",
     [], "B", [], [], None),
    ("recall_parking_spot", "memory", "Where did I say I parked yesterday?",
     ["Answer names level 3, spot 42"], None, ["m1", "m4"], [], "memory"),
    ("open_news_site", "web", "Open example.com/news in the browser.",
     ["Browser shows the news page"], None, [], [], "web"),
    ("play_focus_playlist", "media", "Play the 'Focus' playlist.",
     ["The Focus playlist is playing"], None, [], ["media_playing"], "media"),
    ("set_alarm_7am", "clock", "Set an alarm for 7:00 tomorrow.",
     ["Alarm exists for 7:00", "Alarm is enabled"], None, [], ["alarm_set"], None),
    ("dark_mode_on", "settings", "Switch the phone to dark mode.",
     ["Dark theme is enabled"], None, [], ["dark_theme"], None),
    ("lookup_ana_phone", "contacts", "What is Ana's mobile number?",
     ["Answer gives Ana's mobile number", "No contact was modified"], None, [], [], "contacts"),
    ("recall_gift_idea", "memory", "What gift did I want to buy for my sister?",
     ["Answer names the blue scarf"], None, ["m7"], [], "memory"),
    ("notification_quiz", "qa",
     "Which app sent the latest notification? Answer A, B, C or D. A) Mail B) Clock C) Messages D) Photos",
     [], "C", [], [], None),
    ("search_pharmacy", "web", "Find the nearest open pharmacy and open its page.",
     ["A pharmacy page is open", "The pharmacy is open now"], None, [], [], "web"),
    ("share_last_photo", "messaging", "Share the last photo with Bruno.",
     ["The latest photo was shared", "Recipient is Bruno"], None, [], ["photo_shared"], "messaging"),
]


def screen_point(rng: random.Random) -> dict:
    """A random point on a 1080x2400 screen."""
    return {"x": rng.randrange(1080), "y": rng.randrange(2400)}


def _swipe(rng: random.Random) -> dict:
    return {"x1": 540, "y1": 1800, "x2": 540, "y2": 600 - rng.randrange(400), "duration_ms": 300}


def _quick_action(rng: random.Random) -> dict:
    return {"list": True} if rng.random() < 0.35 else {"action": "toggle_wifi", "list": False}


def _bridge_contacts(rng: random.Random) -> dict:
    if rng.random() < 0.5:
        return {"action": rng.choice(["query", "Query"]), "name": "Ana"}
    return {"action": "add", "name": "Bruno Silva", "phone": "+351912345678"}


def _bridge_calendar(rng: random.Random) -> dict:
    if rng.random() < 0.4:
        return {"action": "list", "day": "2026-12-01"}
    return {"action": "create", "title": "Dentist", "start": "2026-12-01T10:00"}


# tool name -> (weight, input factory)
TOOLS: dict[str, tuple[int, Callable[[random.Random], dict]]] = {
    "tap": (30, screen_point),
    "screenshot": (12, lambda rng: {}),
    "swipe": (8, _swipe),
    "enter_text": (8, lambda rng: {"text": rng.choice(["Running 10 minutes late", "Dentist", "wifi"])}),
    "open_app": (6, lambda rng: {"package": rng.choice(["com.android.settings", "com.android.contacts"])}),
    "press_key": (5, lambda rng: {"key": rng.choice(["BACK", "HOME", "ENTER"])}),
    "long_press": (2, screen_point),
    "launch_app": (2, lambda rng: {"name": rng.choice(["Calendar", "Clock", "Music"])}),
    "open_url": (2, lambda rng: {"url": "https://example.com/news"}),
    "keyboard_text": (2, lambda rng: {"text": "Bruno"}),
    "keyboard_tap": (1, lambda rng: {"key": "ENTER"}),
    "mouse_scroll": (1, lambda rng: {"dy": -400}),
    "mouse_move": (1, screen_point),
    "touch_gesture": (1, lambda rng: {"points": [[100, 200], [900, 200]]}),
    "drag": (1, lambda rng: {"from": [100, 900], "to": [100, 300]}),
    "quick_action": (3, _quick_action),
    "bridge_contacts": (3, _bridge_contacts),
    "bridge_calendar": (2, _bridge_calendar),
    "bridge_notification": (1, lambda rng: {"action": "dismiss", "id": 3}),
    "bridge_media": (1, lambda rng: {"action": "play", "playlist": "Focus"}),
    "bridge_clipboard": (1, lambda rng: {"action": "set", "text": "42"}),
    "search_launch_app": (1, lambda rng: {"query": "clock"}),
    "search": (3, lambda rng: {"query": rng.choice(["pharmacy near me", "dark mode android"])}),
    "recall_memory": (1, lambda rng: {"query": "notes"}),
}
TOOL_NAMES = list(TOOLS)
TOOL_CUM_WEIGHTS = list(itertools.accumulate(weight for weight, _ in TOOLS.values()))
