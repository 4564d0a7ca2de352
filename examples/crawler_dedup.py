#!/usr/bin/env python3
"""Crawler deduplication over a 30-day retention window, with FerroBloom.

A web crawler must not fetch the same URL twice within its retention
period ("seen in the last 30 days"), and should fetch it again after.
Keeping every URL in an exact set costs ~100 bytes per URL; a Bloom filter
at 0.1% error costs a few bytes, at the price of skipping a few URLs it
never saw (false positives). A plain Bloom filter never forgets, though: it
fills, grows, and must be rebuilt by hand. This example uses a windowed
filter with a time window instead, which forgets what is older than the
window in the memory planned for it, and simulates days of crawling.

A run cannot last 30 days, so its clock is shortened: a simulated day lasts
--day-seconds real seconds (0.2 by default), and the filter is reserved with
`WINDOW <window-days x day-seconds>s`, which stands for
`WINDOW <window-days>d` (`WINDOW 6s` for `WINDOW 30d` by default).
Everything else is what a real crawler does on a real clock: the server's
clock decides what the window holds (it begins when BF.RESERVE creates the
filter: neither ORIGIN nor AT is sent), and the example sleeps between its
crawl rounds to keep to the schedule.

1. plans the filter with BF.PLAN ... WINDOW (memory, generations, how late
   it forgets);
2. reserves it with BF.RESERVE key error capacity WINDOW <span>s, the
   capacity being the URLs crawled per window (pages per day x days kept);
3. every simulated day, in --rounds rounds spread evenly over the day (a
   crawler fetches all day long), checks candidate URLs in pipelined
   batches (BF.MEXISTS) and crawls and adds (BF.MADD) those not seen within
   the window; URLs crawled more than a window ago are crawled again;
4. checks every answer against an exact record of when each URL was last
   crawled, in real time: a URL crawled within the window is never crawled
   again (no false negatives); a URL never crawled, or crawled more than one
   window and one generation span ago (the filter forgets at most one
   generation late), that the filter says it has seen is a false positive;
5. measures the false positive rate and explains it against the target
   error rate, and checks that the filter's bit arrays (BF.INFO SIZE) are
   what BF.PLAN planned every day no generation holds more than its share,
   and grew only while one did (a burst is absorbed at the error rate).

It runs against `make run` (127.0.0.1:6379): pass another server with
--url or the FERROBLOOM_URL environment variable. It uses the key PREFIX
(default crawl:seen), deleting what a previous run left there.

    python3 examples/crawler_dedup.py --days 90
    FERROBLOOM_URL=redis://127.0.0.1:7000/0 python3 examples/crawler_dedup.py

Needs redis-py (`pip install redis`). The last line printed is a JSON
summary (`summary {...}`); the exit status is 0 on success, 1 if a URL
crawled within the window was crawled again (a false negative), if memory
differs from the plan while no generation is over its share, or if there were more false positives
than the target error rate explains (a chance below 1 in 1,000 at that
rate), and 2 for bad arguments.
"""

import argparse
import json
import math
import os
import random
import sys
import time

import redis

# The oracle brackets every command between the times it was sent and its
# reply received, so the server's clock (the master's, which decides the
# window) is read somewhere in between, whatever its offset from ours. This
# margin covers the rest: the server counts whole milliseconds, and the
# generation boundaries it computes from them are rounded.
MARGIN_S = 0.010

# More false positives than the target rate gives with a chance below this
# fail the run: rare enough that a correct filter does not fail by bad luck.
FPR_FAIL_CHANCE = 0.001


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--url", default=os.environ.get("FERROBLOOM_URL", "redis://127.0.0.1:6379/0"),
                   help="server URL (default: $FERROBLOOM_URL or redis://127.0.0.1:6379/0)")
    p.add_argument("--prefix", default="crawl:seen", help="key of the filter")
    p.add_argument("--days", type=int, default=90, help="days to simulate")
    p.add_argument("--day-seconds", type=float, default=0.2,
                   help="real seconds a simulated day lasts (window-days x day-seconds must be "
                        "whole seconds: WINDOW takes whole seconds)")
    p.add_argument("--pages-per-day", type=int, default=500, help="pages crawled per day")
    p.add_argument("--window-days", type=int, default=30, help="days a crawled URL is kept")
    p.add_argument("--generations", type=int, default=8, help="GENERATIONS of the window")
    p.add_argument("--rounds", type=int, default=8,
                   help="crawl rounds per day, evenly spaced (a day's pages are spread over them)")
    p.add_argument("--error", type=float, default=0.001, help="target false positive rate")
    p.add_argument("--batch", type=int, default=500, help="most URLs checked per round trip")
    p.add_argument("--seed", type=int, default=7, help="seed of the synthetic web")
    p.add_argument("--quiet", action="store_true", help="print the result and the summary only")
    args = p.parse_args(argv)
    for name in ("days", "pages_per_day", "window_days", "generations", "rounds", "batch"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    if not args.day_seconds > 0:
        p.error("--day-seconds must be positive")
    window_s = args.window_days * args.day_seconds
    if window_s < 1 or abs(window_s - round(window_s)) > 1e-9:
        p.error(f"--window-days x --day-seconds is {window_s:g} s: WINDOW takes whole seconds "
                f"(at least 1)")
    args.window_s = int(round(window_s))
    return args


def url(n):
    return f"https://site{n % 97}.example/articles/{n}"


def pairs(reply):
    """A map reply as a dict: a map in RESP3, a flat name/value list in
    RESP2 (redis-py speaks either, by version)."""
    if isinstance(reply, dict):
        return reply
    return {reply[i]: reply[i + 1] for i in range(0, len(reply), 2)}


def one_field(reply):
    """BF.INFO key FIELD: a one-element array in RESP2, a one-entry map in
    RESP3."""
    return next(iter(reply.values())) if isinstance(reply, dict) else reply[0]


def span_seconds(text):
    """A span as BF.PLAN writes it (`750ms`, `6s`, `90h`, `30d`), in seconds."""
    for unit, scale in (("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600), ("d", 86400)):
        if text.endswith(unit) and text[: -len(unit)].isdigit():
            return int(text[: -len(unit)]) * scale
    raise ValueError(f"not a time span: {text!r}")


def poisson_tail(k, lam):
    """P(X >= k) for X ~ Poisson(lam): the chance of k or more false
    positives when each lookup errs independently at the target rate. Summed
    in log space, so a large lam does not underflow."""
    if k <= 0:
        return 1.0
    if lam <= 0:
        return 0.0
    top = int(max(k, lam) + 40 * math.sqrt(lam) + 100)
    return min(1.0, sum(math.exp(-lam + i * math.log(lam) - math.lgamma(i + 1))
                        for i in range(k, top + 1)))


def most_in_window(times, width):
    """The most of the (sorted) times that fall in any half-open stretch of
    `width` seconds: the most URLs that arrived within one window."""
    best = lo = 0
    for hi, t in enumerate(times):
        while t - times[lo] >= width:
            lo += 1
        best = max(best, hi - lo + 1)
    return best


def main(argv):
    args = parse_args(argv)
    say = (lambda *_: None) if args.quiet else print
    r = redis.Redis.from_url(args.url, decode_responses=True)
    try:
        r.ping()
    except redis.exceptions.ConnectionError as e:
        print(f"cannot connect to {args.url}: {e}", file=sys.stderr)
        return 1
    if "bf_windows" not in r.info("bf"):
        print("this server has no FerroBloom with windowed filters (INFO bf has no bf_windows)",
              file=sys.stderr)
        return 1

    key = args.prefix
    day = args.day_seconds
    capacity = args.pages_per_day * args.window_days  # URLs crawled per window
    window = f"{args.window_s}s"
    stands_for = f"{args.window_days}d"
    if r.delete(key):
        say(f"deleted {key} left by a previous run")
    plan = pairs(r.execute_command("BF.PLAN", capacity, args.error, "WINDOW", window,
                                   "GENERATIONS", args.generations))
    planned = int(plan["bytes"])
    gen_span = span_seconds(plan["generation_span"])
    # What each generation is sized for: its share of the capacity, or 1,024
    # items if that is more (see docs/windows.md, Memory).
    share = int(plan["generation_capacity"])
    say(f"plan {key}: WINDOW {window} standing for WINDOW {stands_for} (a simulated day lasts "
        f"{day:g} s): {capacity:,} URLs per window ({args.window_days} days of "
        f"{args.pages_per_day:,}) at error {args.error}: {planned:,} bytes in "
        f"{plan['bit_arrays']} bit arrays; forgets at most {gen_span / day:g} days "
        f"({plan['generation_span']}) late; a plain filter for one window would take "
        f"{int(plan['plain_filter_bytes']):,} bytes and keep growing")
    r.execute_command("BF.RESERVE", key, args.error, capacity, "WINDOW", window,
                      "GENERATIONS", args.generations)
    # The window began when the server created the filter (its ORIGIN), on
    # or before this instant: day 0 starts now.
    start = time.time()
    say(f"{args.days} days of {args.rounds} crawl rounds: about {args.days * day:g} s")

    rng = random.Random(args.seed)
    universe = args.pages_per_day * (args.window_days * 3 // 2 + 1)
    last_crawl = {}  # exact: URL number -> (sent, replied) of its last BF.MADD
    add_times = []  # when each page was crawled (reply to its BF.MADD)
    crawled = recrawled = skipped = violations = 0
    # URLs the filter must not hold, each counted at its first lookup since
    # it was last crawled (or ever): a URL the filter wrongly holds is skipped,
    # stays uncrawled and comes up again, erring on every lookup until its
    # bits leave the window, so lookups are not independent trials; first
    # lookups are. [false positives, URLs] overall, from the end of the first
    # window on (the filter full), and for URLs crawled before (forgotten).
    fp = {"all": [0, 0], "steady": [0, 0], "forgotten": [0, 0]}
    counted = set()  # URLs whose first lookup since their last crawl is counted
    absent_lookups = absent_skips = 0  # every lookup of such URLs, repeats included
    # False positives the filter's own estimate predicts, overall and from the
    # end of the first window on.
    expected = {"all": 0.0, "steady": 0.0}
    fullest = 0.0  # the fullest generation over its share (BF.STATS fill_ratio)
    most_per_round = 0
    slip = 0.0  # how far the schedule slipped behind (a busy machine)
    memory = []
    sizes = []  # per day: (BF.INFO SIZE, whether a live generation was over its share)
    for d in range(args.days):
        today = 0
        for k in range(args.rounds):
            # The day's pages spread evenly over its rounds. Rounds fall
            # halfway between the generation boundaries a whole number of
            # rounds apart, so a round a little late still lands in its own
            # generation and each takes its share. A round that cannot start
            # on time, give or take a quarter of a round (the previous one ran
            # long, or the machine is busy), waits for the next slot and
            # moves the rest of the schedule with it, rather than letting
            # rounds run back to back: the days then last longer, and never
            # more than the capacity arrives within a window.
            j = d * args.rounds + k
            quota = (((j + 1) * args.pages_per_day) // args.rounds
                     - (j * args.pages_per_day) // args.rounds)
            most_per_round = max(most_per_round, quota)
            period = day / args.rounds
            due = start + slip + (j + 0.5) * period
            now = time.time()
            if now > due + period / 4:
                missed = math.ceil((now - due) / period)
                slip += missed * period
                due += missed * period
            time.sleep(max(0.0, due - now))
            stats = pairs(r.execute_command("BF.STATS", key))
            estimate = float(stats["estimated_fpr"])
            fullest = max(fullest, float(stats["fill_ratio"]))
            got = checked = 0
            while got < quota and checked < 20 * quota + args.batch:
                # Popular pages come up more often: a skewed draw over the web.
                want = min(args.batch, max(4 * (quota - got), 64))
                batch = list(dict.fromkeys(int(rng.random() ** 1.5 * universe)
                                           for _ in range(want)))
                checked += len(batch)
                sent = time.time()
                seen = r.execute_command("BF.MEXISTS", key, *[url(n) for n in batch])
                replied = time.time()
                steady = sent - start >= args.window_s  # the filter holds a whole window
                fetch = []
                for n, answer in zip(batch, seen):
                    last = last_crawl.get(n)
                    # Found for sure: added within the window of this lookup,
                    # even if the server read its clock as late as possible
                    # for the lookup and as early as possible for the add.
                    in_window = last is not None and replied - last[0] <= args.window_s - MARGIN_S
                    # Forgotten for sure: never added, or added more than one
                    # window and one generation span before the lookup.
                    forgotten = last is None or sent - last[1] > args.window_s + gen_span + MARGIN_S
                    if forgotten:
                        absent_lookups += 1
                        absent_skips += bool(answer)
                        if n not in counted:
                            counted.add(n)
                            groups = (["all"] + (["steady"] if steady else [])
                                      + (["forgotten"] if last is not None else []))
                            for g in groups:
                                fp[g][0] += bool(answer)  # the price of the filter
                                fp[g][1] += 1
                                if g in expected:
                                    expected[g] += estimate
                    if answer:
                        skipped += 1
                    elif in_window:
                        violations += 1  # never happens: no false negatives
                    elif got + len(fetch) < quota:
                        fetch.append(n)
                if fetch:
                    sent = time.time()
                    r.execute_command("BF.MADD", key, *[url(n) for n in fetch])
                    replied = time.time()
                    for n in fetch:
                        if n in last_crawl:
                            recrawled += 1
                        last_crawl[n] = (sent, replied)
                        counted.discard(n)
                    add_times.extend([replied] * len(fetch))
                got += len(fetch)
            today += got
        crawled += today
        memory.append(int(r.memory_usage(key)))
        # The bit arrays are the plan's while no live generation has
        # received more than its share; one that has grew (and gives the
        # memory back when it leaves the window).
        size = int(one_field(r.execute_command("BF.INFO", key, "SIZE")))
        fill = float(pairs(r.execute_command("BF.STATS", key))["fill_ratio"])
        fullest = max(fullest, fill)
        sizes.append((size, fill > 1.0))
        if d % 10 == 9 or d == args.days - 1:
            rotations = one_field(r.execute_command("BF.INFO", key, "ROTATIONS"))
            gone = one_field(r.execute_command("BF.INFO", key, "FORGOTTEN"))
            say(f"day {d + 1}: {crawled:,} pages crawled ({recrawled:,} of them again, after "
                f"the window), {skipped:,} skipped as seen; BF.CARD "
                f"{r.execute_command('BF.CARD', key):,}; memory {memory[-1]:,} bytes; "
                f"{rotations} generations retired, {gone:,} URLs forgotten")

    false_positives, urls = fp["all"]
    rate = false_positives / max(urls, 1)
    steady_rate = fp["steady"][0] / max(fp["steady"][1], 1)
    chance = poisson_tail(false_positives, args.error * urls)
    arrived = most_in_window(add_times, args.window_s)
    filter_bytes = int(one_field(r.execute_command("BF.INFO", key, "SIZE")))
    summary = {
        "days": args.days,
        "day_seconds": day,
        "window": window,
        "window_stands_for": stands_for,
        "generations": args.generations,
        "generation_span": plan["generation_span"],
        "pages": crawled,
        "unique_urls": len(last_crawl),
        "recrawled": recrawled,
        "duplicates_skipped": skipped,
        "window_violations": violations,
        "target_error": args.error,
        "absent_urls": urls,
        "false_positives": false_positives,
        "false_positive_rate": rate,
        "steady_absent_urls": fp["steady"][1],
        "steady_false_positives": fp["steady"][0],
        "steady_false_positive_rate": steady_rate,
        "forgotten_urls": fp["forgotten"][1],
        "forgotten_false_positives": fp["forgotten"][0],
        "expected_false_positives": round(expected["all"], 1),
        "steady_expected_false_positives": round(expected["steady"], 1),
        "chance_at_target": chance,
        "fpr_within_target": chance >= FPR_FAIL_CHANCE,
        "absent_lookups": absent_lookups,
        "absent_lookups_skipped": absent_skips,
        "capacity": capacity,
        "most_urls_in_a_window": arrived,
        "fullest_generation_share": round(fullest, 4),
        "schedule_slip_ms": round(slip * 1000, 1),
        "planned_bytes": planned,
        "filter_bytes": filter_bytes,
        "memory_first_day": memory[0],
        "memory_last_day": memory[-1],
        # Memory as planned every day no generation was over its share, and
        # grown only while one was.
        "memory_as_planned": all((size > planned) if over else (size == planned)
                                 for size, over in sizes),
        "days_grown": sum(1 for size, _ in sizes if size > planned),
        "card": int(r.execute_command("BF.CARD", key)),
        "generations_retired": int(one_field(r.execute_command("BF.INFO", key, "ROTATIONS"))),
        # An exact set: the URL plus ~50 bytes of overhead each (a rough guess).
        "exact_set_bytes_estimate": sum(len(url(n)) + 50 for n in last_crawl),
    }
    print(f"done: {args.days} days, {crawled:,} pages crawled ({recrawled:,} again after the "
          f"window), {skipped:,} skipped as seen, {violations} crawled twice within the window; "
          f"memory {memory[-1]:,} bytes on the last day (BF.INFO SIZE {filter_bytes:,}: the "
          f"{planned:,} bytes of bit arrays BF.PLAN planned, and what generations over their "
          f"share grew; {memory[-1] - filter_bytes:,} of key and bookkeeping); "
          f"{summary['days_grown']} day{'s' * (summary['days_grown'] != 1)} above the plan, "
          f"each while a generation held more than its share")
    print(f"false positives: {false_positives:,} of {urls:,} URLs the filter must not hold "
          f"(never crawled, or last crawled more than {(args.window_s + gen_span) / day:g} days "
          f"ago), at their first lookup: {rate:.3%}, target {args.error:.3%}")
    if not args.quiet:
        never = (fp["steady"][0] - fp["forgotten"][0], fp["steady"][1] - fp["forgotten"][1])
        # A round runs for a moment: its pages may fall on both sides of a
        # window's or a generation's edge, hence one round's worth of leeway.
        if arrived > capacity + most_per_round:
            load = "more than the capacity arrived: the target no longer bounds the rate"
        elif fullest * share > share + most_per_round + 0.5:  # 0.5: float rounding
            load = "a generation took more than its share and errs more often"
        elif arrived < 0.9 * capacity:
            load = "fewer than the capacity arrived: the rate should be below the target"
        else:
            load = "the filter ran at its capacity, the load its error rate is sized for"
        print(f"  - the target holds while at most {capacity:,} URLs (the capacity) arrive per "
              f"window: at most {arrived:,} were crawled within any {args.window_days} days, and "
              f"the fullest generation took {fullest:.1%} of its share ({share:,}), give or "
              f"take one crawl round ({most_per_round} pages): {load}")
        print(f"  - from day {args.window_days + 1} on, the filter full: {fp['steady'][0]:,} of "
              f"{fp['steady'][1]:,} ({steady_rate:.3%}): {fp['forgotten'][0]:,} of "
              f"{fp['forgotten'][1]:,} URLs crawled before and forgotten since "
              f"({fp['forgotten'][0] / max(fp['forgotten'][1], 1):.3%}), {never[0]:,} of "
              f"{never[1]:,} never crawled ({never[0] / max(never[1], 1):.3%}); in the first "
              f"{args.window_days} days the filter was filling and erred less")
        print(f"  - the filter's own estimate (BF.STATS estimated_fpr, from the bits set, at each "
              f"round) predicted {expected['all']:,.1f} ({expected['steady']:,.1f} from day "
              f"{args.window_days + 1} on); the target rate would give "
              f"{args.error * urls:,.1f} on average: each of the {args.generations + 1} live "
              f"generations is sized a little below its part of the target, and the newest is "
              f"never full")
        print(f"  - at exactly the target rate, {false_positives:,} or more happen with a chance "
              f"of {chance:.1%}: "
              + ("within the target" if summary["fpr_within_target"] else
                 f"more than the target explains (a chance below {FPR_FAIL_CHANCE:.1%})"))
        print(f"  - per lookup, repeats included: {absent_skips:,} of {absent_lookups:,} "
              f"({absent_skips / max(absent_lookups, 1):.3%}); a URL the filter wrongly holds "
              f"stays uncrawled and comes up again, skipped every time until its generations "
              f"retire, so this counts some errors several times")
        if slip > 0:
            slots = round(slip / (day / args.rounds))
            print(f"  - {slots:,} crawl round slot{'s' * (slots != 1)} passed by while the machine "
                  f"was busy, moving the schedule {slip:.3f} s later: the days they fell in "
                  f"lasted longer than {day:g} s, and a window of them held fewer URLs")
    print("summary " + json.dumps(summary))
    return exit_status(summary)


def exit_status(summary):
    ok = (summary["window_violations"] == 0 and summary["memory_as_planned"]
          and summary["fpr_within_target"])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
