#!/usr/bin/env python3
"""Crawler deduplication over a retention window, with FerroBloom.

A web crawler must not fetch the same URL twice within its retention
period ("seen in the last 30 days"), and should fetch it again after.
Keeping every URL in an exact set costs ~100 bytes per URL; a Bloom filter
at 0.1% error costs a few bytes, at the price of skipping a few URLs it
never saw (false positives). A plain Bloom filter never forgets, though: it
fills, grows, and must be rebuilt by hand. This example uses a windowed
filter instead, which forgets what is older than the window in fixed
memory, and simulates days of crawling:

1. plans the filter with BF.PLAN ... WINDOW (memory, generations, how late
   it forgets);
2. reserves it with BF.RESERVE ... WINDOW: the window counts URLs crawled
   (pages per day x days kept), so a simulated day is one day's crawl;
3. every day, checks candidate URLs in pipelined batches (BF.MEXISTS) and
   crawls and adds (BF.MADD) those not seen within the window; URLs crawled
   more than a window ago are crawled again;
4. checks every answer against an exact record of when each URL was last
   crawled: a URL crawled within the window is never crawled again (no false
   negatives), and memory (MEMORY USAGE) stays what was planned, every day.

It runs against `make run` (127.0.0.1:6379): pass another server with
--url or the FERROBLOOM_URL environment variable. It uses the key PREFIX
(default crawl:seen), deleting what a previous run left there.

    python3 examples/crawler_dedup.py --days 90
    FERROBLOOM_URL=redis://127.0.0.1:7000/0 python3 examples/crawler_dedup.py

Needs redis-py (`pip install redis`). The last line printed is a JSON
summary (`summary {...}`); the exit status is 0 on success, 1 if a URL
crawled within the window was crawled again or memory changed.
"""

import argparse
import json
import os
import random
import sys

import redis


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--url", default=os.environ.get("FERROBLOOM_URL", "redis://127.0.0.1:6379/0"),
                   help="server URL (default: $FERROBLOOM_URL or redis://127.0.0.1:6379/0)")
    p.add_argument("--prefix", default="crawl:seen", help="key of the filter")
    p.add_argument("--days", type=int, default=90, help="days to simulate")
    p.add_argument("--pages-per-day", type=int, default=500, help="pages crawled per day")
    p.add_argument("--window-days", type=int, default=30, help="days a crawled URL is kept")
    p.add_argument("--generations", type=int, default=8, help="GENERATIONS of the window")
    p.add_argument("--error", type=float, default=0.001, help="false positive rate")
    p.add_argument("--batch", type=int, default=500, help="URLs checked per round trip")
    p.add_argument("--seed", type=int, default=7, help="seed of the synthetic web")
    p.add_argument("--quiet", action="store_true", help="print the summary only")
    return p.parse_args(argv)


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
    window = args.pages_per_day * args.window_days  # URLs crawled per window
    if r.delete(key):
        say(f"deleted {key} left by a previous run")
    plan = pairs(r.execute_command("BF.PLAN", window, args.error, "WINDOW", window,
                                   "GENERATIONS", args.generations))
    slack_days = int(plan["generation_span"]) / args.pages_per_day
    say(f"plan {key}: the last {window:,} URLs crawled ({args.window_days} days of "
        f"{args.pages_per_day:,}) at error {args.error}: {int(plan['bytes']):,} bytes in "
        f"{plan['bit_arrays']} bit arrays; forgets at most {slack_days:g} days late; "
        f"a plain filter for one window would take {int(plan['plain_filter_bytes']):,} bytes "
        f"and keep growing")
    r.execute_command("BF.RESERVE", key, args.error, window, "WINDOW", window,
                      "GENERATIONS", args.generations)
    planned = int(plan["bytes"])

    rng = random.Random(args.seed)
    universe = args.pages_per_day * (args.window_days * 3 // 2 + 1)
    last_crawl = {}  # exact: URL number -> day it was last crawled
    crawled = recrawled = skipped = false_positives = violations = absent_checks = 0
    memory = []
    for day in range(args.days):
        today = 0
        checked = 0
        # Popular pages come up more often: a skewed draw over the web.
        while today < args.pages_per_day and checked < 20 * args.pages_per_day:
            batch = list(dict.fromkeys(int(rng.random() ** 1.5 * universe)
                                       for _ in range(args.batch)))
            checked += len(batch)
            seen = r.execute_command("BF.MEXISTS", key, *[url(n) for n in batch])
            fetch = []
            for n, answer in zip(batch, seen):
                last = last_crawl.get(n)
                in_window = last is not None and day - last < args.window_days
                # Never crawled, or crawled before the window and its slack
                # (plus a day: the checks of a day run while it is crawled).
                forgotten = last is None or day - last > args.window_days + slack_days + 1
                absent_checks += forgotten
                if answer:
                    skipped += 1
                    if forgotten:
                        false_positives += 1  # the price of the filter
                elif in_window:
                    violations += 1  # never happens: no false negatives
                elif today + len(fetch) < args.pages_per_day:
                    fetch.append(n)
            if fetch:
                r.execute_command("BF.MADD", key, *[url(n) for n in fetch])
            for n in fetch:
                if n in last_crawl:
                    recrawled += 1
                last_crawl[n] = day
            today += len(fetch)
        crawled += today
        memory.append(int(r.memory_usage(key)))
        if day % 10 == 9 or day == args.days - 1:
            info = r.info("bf")
            say(f"day {day + 1}: {crawled:,} pages crawled ({recrawled:,} of them again, after "
                f"the window), {skipped:,} skipped as seen; BF.CARD {r.execute_command('BF.CARD', key):,}; "
                f"memory {memory[-1]:,} bytes; {info['bf_window_rotations']} generations retired, "
                f"{info['bf_window_forgotten']:,} URLs forgotten")

    info = r.info("bf")
    summary = {
        "days": args.days,
        "pages": crawled,
        "unique_urls": len(last_crawl),
        "recrawled": recrawled,
        "duplicates_skipped": skipped,
        "false_positives": false_positives,
        "false_positive_rate": false_positives / max(absent_checks, 1),
        "window_violations": violations,
        "window_urls": window,
        "planned_bytes": planned,
        "filter_bytes": int(one_field(r.execute_command("BF.INFO", key, "SIZE"))),
        "memory_first_day": memory[0],
        "memory_last_day": memory[-1],
        "memory_flat": len(set(memory)) == 1,
        "card": int(r.execute_command("BF.CARD", key)),
        "generations_retired": int(info["bf_window_rotations"]),
        # An exact set: the URL plus ~50 bytes of overhead each (a rough guess).
        "exact_set_bytes_estimate": sum(len(url(n)) + 50 for n in last_crawl),
    }
    print(f"done: {args.days} days, {crawled:,} pages crawled ({recrawled:,} again after the "
          f"window), {skipped:,} skipped as seen ({false_positives} false positives: "
          f"{summary['false_positive_rate']:.3%} of the URLs not in the window), "
          f"{violations} crawled twice within the window; memory {memory[-1]:,} bytes every day")
    print("summary " + json.dumps(summary))
    return 0 if violations == 0 and summary["memory_flat"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
