"""Guava's Hashing.consistentHash, which the 5.x proxy uses to put a FIFO message group on a queue (spec/17-fifo.md),
checked against the "golden" values Guava itself publishes for it (HashingTest.
testConsistentHash_linearCongruentialGeneratorCompatibility, values shared with the C++ implementation:
https://github.com/google/guava/blob/master/guava-tests/test/com/google/common/hash/HashingTest.java)."""

from __future__ import annotations

import pytest

from model.proxy.clients import compute_consistent_hash

GOLDEN_100 = (0, 55, 62, 8, 45, 59, 86, 97, 82, 59, 73, 37, 17, 56, 86, 21, 90, 37, 38, 83)


def test_guavas_golden_values_over_100_buckets():
    """consistentHash(i, 100) for i = 0..19."""
    assert tuple(compute_consistent_hash(key, 100) for key in range(20)) == GOLDEN_100


@pytest.mark.parametrize("key, buckets, bucket", [
    (10863919174838991, 11, 6), (2016238256797177309, 11, 3), (1673758223894951030, 11, 5),
    (2, 100001, 80343), (2201, 100001, 22152), (2202, 100001, 15018)])
def test_guavas_golden_values_of_large_keys_and_many_buckets(key, buckets, bucket):
    """The same test's values for keys near 2^63 and for 100 001 buckets."""
    assert compute_consistent_hash(key, buckets) == bucket


@pytest.mark.parametrize("key, buckets, bucket", [
    (0, 2**31 - 1, 0), (1, 2**31 - 1, 262355607), (2, 2**31 - 1, 736532115), (3, 2**31 - 1, 1315363102),
    (3, 10**9, 535064810)])
def test_guava_at_the_largest_bucket_counts(key, buckets, bucket):
    """Where a jump's quotient is large, every bit of the divisor ((state >>> 33) + 1) / 2^31 shows: the values
    Guava 32.1.3-jre's Hashing.consistentHash(long, int) answers, run on a JVM (java G.java, this host), up to
    Integer.MAX_VALUE buckets."""
    assert compute_consistent_hash(key, buckets) == bucket
