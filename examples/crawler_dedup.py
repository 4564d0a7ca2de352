#!/usr/bin/env python3
"""Crawler frontier deduplication with FerroBloom.

A web crawler must not fetch the same URL twice. Keeping every URL it has
seen in an exact set costs ~100 bytes per URL; a Bloom filter at 0.1% error
costs under 2 bytes, at the price of skipping a few never-seen URLs (false
positives). This example crawls a synthetic web and:

1. plans its first filter with BF.PLAN (memory, links, false positive rate);
2. reserves it with BF.RESERVE ... NONSCALING, so lookups stay one probe and
   the error rate stays what was planned;
3. checks and adds discovered URLs in pipelined batches (BF.MEXISTS on every
   generation in one round trip, then BF.MADD on the newest);
4. watches the fill after each batch with BF.STATS and INFO bf, and when the
   newest filter reaches the server's alert threshold (bf.fill-alert, 0.9
   by default) rotates to a new filter twice as large. Older generations stay
   and are still checked, so nothing seen before is crawled again.

It runs against `make run` (127.0.0.1:6379): pass another server with
--url or the FERROBLOOM_URL environment variable. Keys used: PREFIX:1,
PREFIX:2, ... (the generations) and PREFIX:generations (their list); those
left by a previous run with the same prefix are deleted first.

    python3 examples/crawler_dedup.py --pages 20000
    FERROBLOOM_URL=redis://127.0.0.1:7000/0 python3 examples/crawler_dedup.py

Needs redis-py (`pip install redis`). The last line printed is a JSON
summary (`summary {...}`); the exit status is 0 on success.
"""

import argparse
import json
import os
import random
import sys
from collections import deque

import redis


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--url", default=os.environ.get("FERROBLOOM_URL", "redis://127.0.0.1:6379/0"),
                   help="server URL (default: $FERROBLOOM_URL or redis://127.0.0.1:6379/0)")
    p.add_argument("--prefix", default="crawl:seen", help="key prefix of the filters")
    p.add_argument("--pages", type=int, default=20000, help="pages to crawl")
    p.add_argument("--capacity", type=int, default=5000, help="capacity of the first filter")
    p.add_argument("--error", type=float, default=0.001, help="error rate of every filter")
    p.add_argument("--growth", type=int, default=2, help="capacity multiplier at each rotation")
    p.add_argument("--batch", type=int, default=100, help="pages fetched per batch")
    p.add_argument("--links", type=int, default=8, help="links per page")
    p.add_argument("--seed", type=int, default=7, help="seed of the synthetic web")
    p.add_argument("--quiet", action="store_true", help="print rotations and the summary only")
    return p.parse_args(argv)


class SyntheticWeb:
    """A deterministic web: page n links to `links` pages; low page numbers
    are popular (linked often), so many discovered links are duplicates."""

    def __init__(self, seed, links, universe):
        self.seed = seed
        self.links = links
        self.universe = universe

    @staticmethod
    def url(n):
        return f"https://site{n % 97}.example/articles/{n}"

    def outlinks(self, n):
        rng = random.Random(self.seed * 1_000_003 + n)
        out = []
        for _ in range(self.links):
            if rng.random() < 0.5:
                # Popular pages: a skewed choice among the first 2%.
                target = int((rng.random() ** 3) * self.universe * 0.02)
            else:
                target = rng.randrange(self.universe)
            out.append(target)
        return out


def pairs(reply):
    """BF.STATS / BF.PLAN reply as a dict: a map in RESP3, a flat
    name/value list in RESP2 (redis-py speaks either, by version)."""
    if isinstance(reply, dict):
        return reply
    return {reply[i]: reply[i + 1] for i in range(0, len(reply), 2)}


def size_of(r, key):
    """BF.INFO key SIZE: a one-element array in RESP2, a one-entry map in
    RESP3."""
    reply = r.execute_command("BF.INFO", key, "SIZE")
    return int(next(iter(reply.values())) if isinstance(reply, dict) else reply[0])


class Generations:
    """The filters: the newest takes adds, every one is checked."""

    def __init__(self, r, prefix, error, growth, say):
        self.r = r
        self.prefix = prefix
        self.error = error
        self.growth = growth
        self.say = say
        self.keys = []
        self.capacity = 0
        self.items = 0
        self.rotations = 0

    @property
    def list_key(self):
        return f"{self.prefix}:generations"

    def reset(self):
        old = self.r.lrange(self.list_key, 0, -1)
        if old:
            self.r.delete(*old)
            noun = "filter" if len(old) == 1 else "filters"
            self.say(f"deleted {len(old)} {noun} left by a previous run: {', '.join(old)}")
        self.r.delete(self.list_key)

    def create(self, capacity):
        key = f"{self.prefix}:{len(self.keys) + 1}"
        plan = pairs(self.r.execute_command("BF.PLAN", capacity, self.error, "NONSCALING"))
        self.say(
            f"plan {key}: capacity {int(plan['capacity']):,} at error {self.error} -> "
            f"{len(plan['links'])} link, {int(plan['bytes']):,} bytes "
            f"(BF.INFO Size {int(plan['size']):,}), false positive rate when full {float(plan['fpr']):.6f}"
        )
        self.r.execute_command("BF.RESERVE", key, self.error, capacity, "NONSCALING")
        self.r.rpush(self.list_key, key)
        self.keys.append(key)
        self.capacity = int(plan["capacity"])
        self.items = 0

    def rotate(self, reason):
        old = self.keys[-1]
        capacity = self.capacity * self.growth
        self.say(f"{reason}: rotating {old} -> {self.prefix}:{len(self.keys) + 1} "
                 f"(capacity {capacity:,}); {old} is kept and still checked")
        self.rotations += 1
        self.create(capacity)

    def seen(self, urls):
        """One pipelined round trip: BF.MEXISTS on every generation."""
        pipe = self.r.pipeline(transaction=False)
        for key in self.keys:
            pipe.execute_command("BF.MEXISTS", key, *urls)
        answers = pipe.execute()
        return [any(a[i] for a in answers) for i in range(len(urls))]

    def add(self, urls):
        """BF.MADD into the newest filter, never past its capacity. Returns
        how many the filter counted as new."""
        added = 0
        i = 0
        while i < len(urls):
            room = self.capacity - self.items
            if room <= 0:
                self.rotate("full")
                continue
            part = urls[i:i + min(room, 1000)]
            reply = self.r.execute_command("BF.MADD", self.keys[-1], *part)
            for x in reply:
                if isinstance(x, Exception):
                    raise x
            n = sum(1 for x in reply if x == 1)
            self.items += n
            added += n
            i += len(part)
        return added

    def watch(self):
        """BF.STATS of the newest filter and the server's INFO bf, in one
        round trip."""
        pipe = self.r.pipeline(transaction=False)
        pipe.execute_command("BF.STATS", self.keys[-1])
        pipe.info("bf")
        stats, info = pipe.execute()
        stats = pairs(stats)
        self.items = int(stats["items"])
        return stats, info


def main(argv):
    args = parse_args(argv)
    r = redis.Redis.from_url(args.url, decode_responses=True)
    say = (lambda *_: None) if args.quiet else print
    try:
        r.ping()
    except redis.exceptions.ConnectionError as e:
        print(f"cannot connect to {args.url}: {e}", file=sys.stderr)
        return 1
    info = r.info("bf")
    if "bf_fill_alert_threshold" not in info:
        print("this server has no FerroBloom INFO bf section (BF.PLAN, BF.STATS needed)", file=sys.stderr)
        return 1
    alert = float(info["bf_fill_alert_threshold"])
    print(f"crawling {args.pages:,} pages on {args.url}; rotating at fill {alert} (bf.fill-alert)")

    gens = Generations(r, args.prefix, args.error, args.growth, print)
    gens.reset()
    gens.create(args.capacity)

    web = SyntheticWeb(args.seed, args.links, universe=args.pages * 20)
    truth = set()  # exact, only to count the filter's false positives
    start = 0
    gens.add([web.url(start)])
    truth.add(start)
    frontier = deque([start])
    crawled = duplicates = false_positives = batches = 0

    while frontier and crawled < args.pages:
        batch = [frontier.popleft() for _ in range(min(args.batch, len(frontier), args.pages - crawled))]
        crawled += len(batch)
        batches += 1
        discovered = []
        in_batch = set()
        for page in batch:
            for target in web.outlinks(page):
                if target not in in_batch:
                    in_batch.add(target)
                    discovered.append(target)
        urls = [web.url(n) for n in discovered]
        flags = gens.seen(urls)
        new = []
        for n, url, seen in zip(discovered, urls, flags):
            if seen:
                duplicates += 1
                if n not in truth:
                    false_positives += 1  # never seen, skipped: the price of the filter
            else:
                new.append((n, url))
        gens.add([url for _, url in new])
        for n, _ in new:
            truth.add(n)
            frontier.append(n)

        stats, info = gens.watch()
        fill = float(stats["fill_ratio"])
        if batches % 20 == 0:
            say(f"crawled {crawled:,} pages, {len(truth):,} unique URLs, frontier {len(frontier):,}; "
                f"{gens.keys[-1]} fill {fill:.1%} ({stats['fill_level']}), "
                f"est. FPR {float(stats['estimated_fpr']):.2g}; INFO bf: filters {info['bf_filters']}, "
                f"over alert {info['bf_filters_over_alert']}, max fill {float(info['bf_max_fill_ratio']):.3f}")
        if stats["fill_level"] == "alert":
            gens.rotate(f"ALERT {gens.keys[-1]} is {fill:.1%} full (alert threshold {alert})")

    stats, info = gens.watch()
    summary = {
        "pages": crawled,
        "unique_urls": len(truth),
        "duplicates_skipped": duplicates,
        "false_positives": false_positives,
        "rotations": gens.rotations,
        "generations": gens.keys,
        "newest_fill_ratio": float(stats["fill_ratio"]),
        "filters_over_alert": int(info["bf_filters_over_alert"]),
        # What this crawl's filters take (BF.INFO Size), and what every
        # filter on the server takes (INFO bf).
        "filter_bytes": sum(size_of(r, k) for k in gens.keys),
        "bf_bytes": int(info["bf_bytes"]),
        # An exact set: the URL plus ~50 bytes of overhead each (a rough guess).
        "exact_set_bytes_estimate": sum(len(web.url(n)) + 50 for n in truth),
    }
    print(f"done: {crawled:,} pages crawled, {len(truth):,} unique URLs, {duplicates:,} duplicates skipped "
          f"({false_positives} of them false positives), {gens.rotations} rotations, "
          f"{len(gens.keys)} filters using {summary['filter_bytes']:,} bytes "
          f"(all Bloom filters on the server: {summary['bf_bytes']:,} bytes)")
    print("summary " + json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
