"""An attempt folder's files in the runner's shapes (run-directory.md "The runner's layout",
"Attempt folders"): history.json with image attachments as ``kind``, the runner's
trace.json, judge.json and environment_state.json, and pre.jpg / post.jpg. Each holds what
the flat file of the same attempt holds; nothing here draws a random number."""

from __future__ import annotations

import base64
import hashlib

import orjson

from .records import History

# A valid 1x1 JPEG: the runner's pre.jpg / post.jpg.
JPEG_BYTES = base64.b64decode(
    "/9j/4AAQSkZJRgABAQEASABIAAD/2wBDAP////////////////////////////////////////////////////////"
    "//////////////////////////////wgALCAABAAEBAREA/8QAFBABAAAAAAAAAAAAAAAAAAAAAP/aAAgBAQABPxA=") + b"\xff\xd9"
# The observed state a route leads to, by environment-state check id (environment_state.json).
ROUTES = {"wifi_settings_open": "settings/network/wifi", "bluetooth_on": "settings/connected_devices",
          "sms_sent": "messages/thread", "contact_exists": "contacts/detail", "event_exists": "calendar/day",
          "media_playing": "music/now_playing", "alarm_set": "clock/alarms", "dark_theme": "settings/display",
          "photo_shared": "photos/share"}


def runner_attachment(attachment: dict) -> dict:
    """A flat image attachment as the runner writes it: ``kind`` for ``type`` (in the same
    place) and the runner's .jpg for .png, so the message keeps its length."""
    out = {("kind" if key == "type" else key): value for key, value in attachment.items()}
    path = out.get("path")
    if isinstance(path, str) and path.endswith(".png"):
        out["path"] = path[:-4] + ".jpg"
    return out


def runner_messages(messages: list[dict]) -> list[dict]:
    """history.json's messages with the runner's attachments; the messages are not changed."""
    out = []
    for message in messages:
        attachments = message.get("attachments")
        if isinstance(attachments, list):
            message = {**message, "attachments": [runner_attachment(a) if isinstance(a, dict) else a
                                                  for a in attachments]}
        out.append(message)
    return out


def runner_trace(history: History) -> dict:
    """The runner's trace.json: ``{tool_calls: [{step, tool, input, has_screenshot}],
    final_response, total_tool_calls}`` (a call's name is ``tool``, its arguments ``input``)."""
    calls = [{"step": n, "tool": s.name, "input": s.tool_input, "has_screenshot": s.screenshot}
             for n, s in enumerate(history.steps, start=1)]
    return {"tool_calls": calls, "final_response": history.final_response, "total_tool_calls": len(calls)}


def runner_judge(judge: dict) -> dict:
    """The runner's judge.json: ``{verdicts, overall_notes, cache_key, image_count,
    image_labels}`` from the flat ``{model, verdicts, error}``."""
    verdicts = judge.get("verdicts") or []
    key = hashlib.sha256(orjson.dumps([judge.get("model"), verdicts], option=orjson.OPT_SORT_KEYS)).hexdigest()
    notes = judge.get("error") or ("All requirements met." if all(v.get("verdict") == "yes" for v in verdicts)
                                   else "Some requirements are not met on the final screen.")
    return {"verdicts": verdicts, "overall_notes": notes, "cache_key": key[:24], "image_count": 2,
            "image_labels": ["pre", "post"]}


def runner_environment_state(env: dict) -> dict:
    """The runner's environment_state.json: the observed state with its ``route`` (the checks
    themselves are the row's ``environment_state_assertions``)."""
    checks = [c for c in env.get("checks") or [] if isinstance(c, dict)]
    route = ROUTES.get(checks[0].get("id"), "home") if checks else "home"
    return {"route": route, "state": {str(c.get("id")): c.get("actual") for c in checks}}
