"""Scores in size-bounded batches: each attempt's ``benchmark.*`` scores on its experiment item
(from a sender thread, at most two batches waiting for their answer), then the run-level
scores on the experiment (v3: once the dataset run exists), then the deletion of the scores a
publication left out since an earlier one confirmed them (``delete_stale_scores``)."""

from __future__ import annotations

import orjson

from .. import endpoints, payloads
from ..ids import attempt_score_id, content_hash, run_score_id
from ..plan import AttemptPlan
from ..record import now_iso
from ..retry import DeliveryFailure
from ..server_generation import INGESTION
from ..state import Publication


def encode_scores(pub: Publication, scores: list[dict]) -> list[bytes]:
    """Each score as the unit its endpoint takes: a ``score-create`` event, or an array element."""
    assert pub.profile is not None
    if pub.profile.scores_via == INGESTION:
        return [payloads.score_event_bytes(s) for s in scores]
    return [orjson.dumps(s) for s in scores]


def send_encoded(pub: Publication, what: str, encoded: list[bytes]) -> None:
    """One batch of encoded scores to the endpoint the server offers."""
    http = pub.http
    assert http is not None and pub.profile is not None
    if pub.profile.scores_via == INGESTION:
        endpoints.send_ingestion(http, what, encoded)
    else:
        endpoints.send_scores(http, what, encoded)


def score_limit(pub: Publication) -> int:
    """Bytes of encoded scores one request may carry (the body's wrapping left out)."""
    assert pub.profile is not None
    if pub.profile.scores_via == INGESTION:
        return pub.options.max_ingestion_bytes - 16  # '{"batch":[' + ']}'
    return pub.options.max_score_bytes - 2


def send_attempt_scores(pub: Publication, attempts: list[AttemptPlan]) -> None:
    """Scores of these attempts in size-bounded batches (an attempt's scores travel together),
    handed to the sender thread (at most two batches wait for their answer)."""
    rec = pub.record
    work: list[tuple[AttemptPlan, list[bytes], str]] = []
    for a in attempts:
        encoded, h = pub.score_units(a, rec["bindings"][a.item_id])
        confirmed = rec["attempt_scores"].get(a.item_id)
        if confirmed is not None and confirmed.get("hash") == h:
            if "names" not in confirmed:  # a record from before names were kept
                confirmed["names"] = names_key(pub, score_names(a))
            pub.done.add(a.item_id)
            continue
        work.append((a, encoded, h))
    if not work:
        return
    sizes = [sum(len(e) + 1 for e in encoded) for _, encoded, _ in work]
    for group in payloads.chunk_by_size(work, sizes, score_limit(pub), pub.options.max_scores_per_request):
        batch = [(a, len(es), h) for a, es, h in (work[i] for i in group)]
        encoded = [e for i in group for e in work[i][1]]
        what = f"score batch ({len(encoded)} scores)"
        sender = pub.sender
        if sender is None:
            pub.pending_scores.append((None, what, encoded, batch))
        else:
            pub.pending_scores.append((sender.submit(send_encoded, pub, what, encoded), what, encoded, batch))
        collect_scores(pub, 2)


def collect_scores(pub: Publication, keep: int) -> None:
    """Wait for the oldest score batches until at most ``keep`` are pending; record each."""
    rec = pub.record
    while len(pub.pending_scores) > keep:
        future, what, encoded, batch = pub.pending_scores.pop(0)
        try:
            if future is None:
                send_encoded(pub, what, encoded)
            else:
                future.result()
        except DeliveryFailure as exc:
            pub.score_failures[0] += len(batch)
            pub.score_failures[1] = pub.score_failures[1] or exc.detail
            continue
        now = now_iso()
        for a, count, h in batch:
            names = score_names(a)
            left_out(pub, rec["attempt_scores"].get(a.item_id), names,
                     lambda name, a=a: (attempt_score_id(pub.plan.suite, pub.plan.run_id, a.item_id, name),
                                        f"{a.name} {name}"))
            rec["attempt_scores"][a.item_id] = {"count": count, "hash": h, "confirmed_at": now,
                                                "names": names_key(pub, names)}
            pub.done.add(a.item_id)  # _write_all takes it out again if its item or run item failed
        pub.sent["scores"] += len(encoded)


def run_scores(pub: Publication) -> None:
    """Run-level scores on the experiment (v3: once the dataset run exists)."""
    rec = pub.record
    h = content_hash(pub.plan.run_scores)
    done = rec["run_scores"]
    if done is not None and done.get("hash") == h and done.get("experiment_id") == rec["experiment_id"] \
            and done.get("timestamp") == pub.anchor:
        return
    if not rec["experiment_id"]:
        pub.errors.append(("run-level scores", len(pub.plan.run_scores),
                            "the dataset run does not exist yet (no dataset run item was accepted)"))
        return
    encoded = encode_scores(pub, payloads.run_score_payloads(pub.plan, rec["experiment_id"], pub.anchor))
    for group in payloads.chunk_by_size(encoded, [len(e) + 1 for e in encoded], score_limit(pub),
                                 pub.options.max_scores_per_request):
        batch = [encoded[i] for i in group]
        try:
            send_encoded(pub, f"run score batch ({len(batch)} scores)", batch)
        except DeliveryFailure as exc:
            pub.errors.append(("run-level scores", len(encoded), exc.detail))
            return
        pub.sent["scores"] += len(batch)
    names = tuple(name for name, _ in pub.plan.run_scores)
    left_out(pub, rec["run_scores"], names,
             lambda name: (run_score_id(pub.plan.suite, pub.plan.run_id, name), f"run {name}"))
    rec["run_scores"] = {"count": len(encoded), "hash": h, "experiment_id": rec["experiment_id"],
                         "timestamp": pub.anchor, "confirmed_at": now_iso(), "names": names_key(pub, names)}


def score_names(a: AttemptPlan) -> tuple[str, ...]:
    """The names of the scores an attempt's publication sends (its known values), in order."""
    return tuple(name for name, _, _ in a.scores)


def names_key(pub: Publication, names: tuple[str, ...]) -> str:
    """The record's key of a set of score names: each distinct set is kept once, under
    ``score_names`` (a few sets, by outcome, for thousands of attempts), and an entry of
    ``attempt_scores`` or ``run_scores`` names its set by the key."""
    key = pub.name_keys.get(names)
    if key is None:
        key = content_hash(list(names))[:16]
        pub.record["score_names"][key] = list(names)
        pub.name_keys[names] = key
    return key


def left_out(pub: Publication, before: dict | None, names: tuple[str, ...], identify) -> None:
    """Keep for deletion (``stale_scores``) the scores confirmed before (the names of
    ``before["names"]``) that the scores now confirmed (``names``) leave out; a score sent
    again is not deleted. ``identify(name)``: (score id, what it was). A record entry from
    before names were kept names nothing: its left-out scores are not known, and stay."""
    rec = pub.record
    stale = rec["stale_scores"]
    if stale:
        for name in names:
            stale.pop(identify(name)[0], None)
    confirmed = rec["score_names"].get((before or {}).get("names") or "")
    if confirmed:
        for name in sorted(set(confirmed) - set(names)):
            score_id, what = identify(name)
            stale[score_id] = what


def departed(pub: Publication) -> list[str]:
    """The attempts (item ids) whose scores an earlier publication of this run confirmed and
    that the run no longer has: a run processed again whose results file lost a line (a
    re-judge cut short), whose duplicate rows changed, ..."""
    current = {a.item_id for a in pub.plan.attempts}
    return [item_id for item_id in pub.record["attempt_scores"] if item_id not in current]


def forget_departed(pub: Publication) -> None:
    """Keep for deletion (``stale_scores``) every score of the attempts that left the run
    (``departed``), so that Langfuse does not show an attempt the run no longer has with its
    old success and quality beside the run's scores; the record forgets their scores (a
    later publication that has them again sends them again). Their experiment items stay:
    a span or a dataset run item cannot be deleted through the public API (docs/langfuse.md,
    "Limitations"). An entry from before names were kept names nothing to delete."""
    rec = pub.record
    for item_id in departed(pub):
        entry = rec["attempt_scores"].pop(item_id)
        for name in rec["score_names"].get(entry.get("names") or "") or ():
            score_id = attempt_score_id(pub.plan.suite, pub.plan.run_id, item_id, name)
            rec["stale_scores"][score_id] = f"{item_id} {name} (the attempt is no longer in the run)"


#: The endpoint of a score's deletion, for the retry policy (one route for every score id).
DELETE_ROUTE = "DELETE /api/public/scores/{id}"


def delete_stale_scores(pub: Publication) -> None:
    """Delete the scores kept in ``stale_scores`` with the SDK's ``scores.delete`` (the server
    queues the deletion and answers 202; the route's earlier form answered 404 for a score it
    did not have, which is as good). Transient failures are retried; a rate limit is not waited
    for (Langfuse Cloud counts deletions per day: ``score-delete``, 50 a day on the hobby
    plan): the deletions not done stay in the record for the next publication, and the call
    says so."""
    http, stale = pub.http, pub.record["stale_scores"]
    assert http is not None
    for score_id, what in list(stale.items()):
        try:
            http.call(f"stale score delete ({what})",
                      lambda ro, score_id=score_id: http.api.scores.delete(score_id, request_options=ro),
                      route=DELETE_ROUTE, wait_when_limited=False)
        except DeliveryFailure as exc:
            if exc.status != 404:
                pub.errors.append((STALE_SCORES, len(stale), f"{exc.detail}; left for the next publication"))
                return
        del stale[score_id]
        pub.sent["scores_deleted"] += 1


#: How a deletion failure is named in the publication's error.
STALE_SCORES = "deletion of scores left out since an earlier publication (their values are unknown now)"
