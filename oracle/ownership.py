"""Which instance holds which queue, known from the membership events alone (spec/10-rebalance.md, RB-01): the
reference's AllocateMessageQueueAveragely written out here, not imported from model/, so that an oracle can say
whose ProcessQueue a rebalance or a crash took away while its listener ran.

A membership change moves every member's queues at once (every instance re-balances, RB-01); after a crash the
survivors move at their own next rebalance, within REBALANCE_INTERVAL_MS (RB-06): until then a queue a survivor is
about to lose is *unsure* — its ProcessQueue may be dropped at any instant of that window.
"""

from __future__ import annotations

# RebalanceService.waitInterval: every instance re-balances every 20 s (4.9.8 RebalanceService L28-L30).
REBALANCE_INTERVAL_MS = 20_000


def compute_averagely(queues: list, members: list, member: str) -> list:
    """AllocateMessageQueueAveragely.allocate (4.9.8 L29-L47), transcribed from the Java source: member i of n gets
    a contiguous slice of the sorted queues, the first `len % n` members one queue more; none when not a member."""
    if member not in members:
        return []
    index, total, n = members.index(member), len(queues), len(members)
    mod = total % n
    if total <= n:
        average = 1
    else:
        average = total // n + 1 if mod > 0 and index < mod else total // n
    start = index * average if mod > 0 and index < mod else index * average + mod
    return [queues[(start + i) % total] for i in range(min(average, total - start))]


class Ownership:
    """The queues of each member, per topic (rebalanceByTopic: the topic and %RETRY%<group> split on their own)."""

    def __init__(self, queues: list, clustering: bool, members=()):
        self.by_topic: dict[str, list] = {}
        for mq in sorted(queues):
            self.by_topic.setdefault(mq.topic, []).append(mq)
        self.clustering = clustering
        self.members = tuple(sorted(members))
        # (client, queue) -> the end of the window in which a survivor of a crash may drop it (RB-06).
        self.unsure_until: dict = {}
        # Queues whose head the broker deleted: any owner's ProcessQueue may meet OFFSET_ILLEGAL (PL-08) from then on.
        self.expired: set = set()

    def get_queues(self, member: str, members=None) -> frozenset:
        """The queues `member` holds when `members` (default: the current ones) are the group."""
        members = sorted(self.members if members is None else members)
        if member not in members:
            return frozenset()
        if not self.clustering:
            return frozenset(mq for queues in self.by_topic.values() for mq in queues)
        return frozenset(mq for queues in self.by_topic.values() for mq in compute_averagely(queues, members, member))

    def set_members(self, members) -> set:
        """A membership change: the (client, queue) pairs it takes away, at once."""
        lost = {(c, mq) for c in self.members for mq in self.get_queues(c) - self.get_queues(c, members)}
        self.members = tuple(sorted(members))
        self.unsure_until = {}
        return lost

    def crash(self, client: str, now: int) -> set:
        """A crash: every pair of `client` is gone at once; the survivors' lost pairs become unsure for 20 s."""
        gone = {(client, mq) for mq in self.get_queues(client)}
        survivors = tuple(m for m in self.members if m != client)
        for member in survivors:
            for mq in self.get_queues(member) - self.get_queues(member, survivors):
                self.unsure_until[member, mq] = now + REBALANCE_INTERVAL_MS
        self.members = survivors
        return gone

    def is_unsure(self, client: str, mq, now: int) -> bool:
        return mq in self.expired or self.unsure_until.get((client, mq), -1) >= now
