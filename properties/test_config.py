"""Properties of spec/01-configuration.md: defaults, ranges, delay levels, profiles."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import event, example, given
from hypothesis import strategies as st

from model.values.config import Config, ConsumeMode, compute_suspend_millis, get_max_reconsume_times
from model.values.delay_levels import TIME_UNIT_MILLIS, parse_delay_level
from model.values.errors import ConfigError
from model.values.profiles import PROFILES, Profile

# Copied from the reference's constants table (§1.8, §10), not from the model.
ROCKETMQ_DEFAULTS = {
    "consume_message_batch_max_size": 1,
    "pull_batch_size": 32,
    "pull_threshold_for_queue": 1000,
    "pull_threshold_size_for_queue": 100,
    "pull_threshold_for_topic": -1,
    "pull_threshold_size_for_topic": -1,
    "consume_concurrently_max_span": 2000,
    "pull_interval": 0,
    "consume_timeout": 15,
    "max_reconsume_times": -1,
    "suspend_current_queue_time_millis": 1000,
    "persist_consumer_offset_interval": 5000,
    "pull_time_delay_mills_when_exception": 1000,
    "consume_thread_min": 20,
    "consume_thread_max": 20,
    "retry_queue_nums": 1,
    "retry_max_times": 16,
    "flush_delay_offset_interval": 10000,
    "message_delay_level": "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h",
}

# checkConfig's ranges (DMPCI 4.9.8 L745-L835), as (low, high).
CHECK_CONFIG_RANGES = {
    "consume_thread_max": (1, 1000),
    "consume_concurrently_max_span": (1, 65535),
    "pull_threshold_for_queue": (1, 65535),
    "pull_threshold_for_topic": (1, 6553500),
    "pull_threshold_size_for_queue": (1, 1024),
    "pull_threshold_size_for_topic": (1, 102400),
    "pull_interval": (0, 65535),
    "consume_message_batch_max_size": (1, 1024),
    "pull_batch_size": (1, 1024),
}


@given(profile=st.sampled_from(sorted(PROFILES)))
def test_defaults_are_rocketmqs(profile):
    """CFG-01: the knobs' defaults are RocketMQ's whatever the profile; the default profile is 4.9.8."""
    event("CFG-01")
    config = Config(profile=profile)
    assert {name: getattr(config, name) for name in ROCKETMQ_DEFAULTS} == ROCKETMQ_DEFAULTS
    assert config.profile.name == profile
    assert config.is_clustering and not config.is_orderly
    assert Config().profile.name == "4.9.8"


@pytest.mark.parametrize("mode, expected", [(ConsumeMode.CONCURRENTLY, 16), (ConsumeMode.ORDERLY, 2**31 - 1)])
@given(explicit=st.integers(0, 2**31 - 1))
def test_max_reconsume_times_resolves_by_consume_mode(mode, expected, explicit):
    """CFG-02"""
    event("CFG-02")
    assert get_max_reconsume_times(Config(consume_mode=mode)) == expected
    assert get_max_reconsume_times(Config(consume_mode=mode, max_reconsume_times=explicit)) == explicit


UNITS = st.sampled_from(sorted(TIME_UNIT_MILLIS))


@given(st.lists(st.tuples(st.integers(0, 10**6), UNITS), min_size=1, max_size=30))
def test_delay_levels_round_trip(entries):
    """CFG-03: level i + 1 is entry i, max level = number of entries."""
    event("CFG-03")
    text = " ".join(f"{count}{unit}" for count, unit in entries)
    config = Config(message_delay_level=text)
    assert config.max_delay_level == len(entries)
    seconds = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    assert [ms // 1000 for ms in config.delay_levels] == [count * seconds[unit] for count, unit in entries]


# What RocketMQ 4.9.8's ScheduleMessageService.parseDelayLevel made of these texts (run in Java 17: split(" "),
# Long.parseLong, a long product): accepted, with these delays in ms, or the broker refuses to start.
JAVA_ACCEPTS = {"1s 5s ": (1000, 5000), "+5s 05s": (5000, 5000), "-5s": (-5000,), "1s 5s  ": (1000, 5000),
                "9223372036854775807s": (-1000,), "\u0665s": (5000,)}
JAVA_REFUSES = ["", "5x", "1s 5x", "1s  5s", " 1s", "s", "1.5s", "5S", "1_0s", "9223372036854775808s", "1s\t5s"]


@pytest.mark.parametrize("text", sorted(JAVA_ACCEPTS))
def test_delay_levels_java_accepts(text):
    """CFG-03: a trailing space, a sign, a leading zero, a negative count, an overflowing product and a non-ASCII
    digit are all accepted by Java, with these delays."""
    assert parse_delay_level(text) == JAVA_ACCEPTS[text]


@pytest.mark.parametrize("text", JAVA_REFUSES + [" "])
def test_bad_delay_levels_are_rejected(text):
    """CFG-03: the broker refuses to start with these (" " is the model's own limit: Java reads no level at all);
    the model raises ConfigError naming the field and the text."""
    with pytest.raises(ConfigError) as error:
        parse_delay_level(text)
    assert error.value.field == "message_delay_level" and repr(text) in str(error.value)


def java_delay_levels(text: str) -> tuple[int, ...] | None:
    """An oracle of parseDelayLevel for ASCII texts, by regular expressions: None where Java throws."""
    entries = re.sub(" +$", "", text).split(" ") if text.strip(" ") or not text else []
    delays = []
    for entry in entries:
        match = re.fullmatch(r"([+-]?[0-9]+)([smhd])", entry)
        if match is None or not -(2**63) <= int(match[1]) < 2**63:
            return None
        product = int(match[1]) * {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}[match[2]]
        delays.append((product + 2**63) % 2**64 - 2**63)
    return tuple(delays)


TOKENS = st.sampled_from(["", " ", "  ", "0", "5", "05", "+", "-", "s", "m", "h", "d", "x", "S", "9223372036854775807"])


@given(st.lists(TOKENS, max_size=12).map("".join))
def test_delay_levels_parse_like_java(text):
    """CFG-03: the model accepts exactly what Java's split(" ") + Long.parseLong accept, with the same delays (a
    Java long), except a text of spaces only, which Java reads as no level and the model refuses."""
    event("CFG-03")
    expected = java_delay_levels(text)
    if expected is None or expected == ():
        with pytest.raises(ConfigError):
            parse_delay_level(text)
    else:
        assert parse_delay_level(text) == expected


@given(st.integers(-1, 10**6), st.integers(0, 10**6))
def test_suspend_is_clamped(context_millis, consumer_millis):
    """CFG-04"""
    event("CFG-04")
    config = Config(suspend_current_queue_time_millis=consumer_millis)
    millis = compute_suspend_millis(config, context_millis)
    chosen = consumer_millis if context_millis == -1 else context_millis
    assert 10 <= millis <= 30_000
    assert millis == chosen or (chosen < 10 and millis == 10) or (chosen > 30_000 and millis == 30_000)


@pytest.mark.parametrize("name", sorted(CHECK_CONFIG_RANGES))
def test_ranges_match_check_config(name):
    """CFG-05: the bounds are accepted, one step outside is a ConfigError naming field, value and range."""
    low, high = CHECK_CONFIG_RANGES[name]
    extra = {"consume_thread_min": 1} if name == "consume_thread_max" else {}
    assert getattr(Config(**{name: low}, **extra), name) == low
    assert getattr(Config(**{name: high}, **extra), name) == high
    for bad in (low - 1 if low - 1 != -1 else -2, high + 1):
        with pytest.raises(ConfigError) as error:
            Config(**{name: bad}, **extra)
        assert (error.value.field, error.value.value) == (name, bad)
        assert f"[{low}, {high}]" in str(error.value)


def test_thread_min_above_max_is_rejected():
    """CFG-05"""
    with pytest.raises(ConfigError, match="consume_thread_min=21"):
        Config(consume_thread_min=21)


ANY_VALUE = st.one_of(
    st.integers(-(2**40), 2**40), st.booleans(), st.none(), st.text(max_size=12), st.floats(allow_nan=True),
    st.sampled_from(["4.9.8", "5.0.0", "clustering", "orderly", "last", "1s 2m", "10x"]),
)
FIELDS = sorted(a.name for a in Config.__attrs_attrs__ if a.init)


@given(st.dictionaries(st.sampled_from(FIELDS), ANY_VALUE, max_size=6))
@example({"message_delay_level": 5})  # not a string: parsed only as one
def test_only_config_error_escapes(kwargs):
    """CFG-05: Config(...) either builds or raises ConfigError naming one of the given fields."""
    event("CFG-05")
    try:
        Config(**kwargs)
    except ConfigError as error:
        assert error.field in kwargs or error.field == "consume_thread_min"
        assert error.field in str(error) and "expected" in str(error)


def test_unknown_profile_is_rejected():
    """CFG-06"""
    with pytest.raises(ConfigError, match="profile='4.9.9'.*4.9.1, 4.9.8, 5.0.0, 5.3.3"):
        Config(profile="4.9.9")


def parse_profile_table() -> dict[str, dict[str, bool]]:
    text = (Path(__file__).parent.parent / "spec" / "01-configuration.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `(\w+)` \|(.+)\|[^|]*\|$", text, flags=re.MULTILINE)
    header = ["4.9.1", "4.9.8", "5.0.0", "5.3.3", "develop"]
    return {flag: dict(zip(header, [c.strip() == "✓" for c in cells.split("|")], strict=True)) for flag, cells in rows}


PROFILE_TABLE = parse_profile_table()


def test_profile_table_lists_every_flag_and_profile():
    """CFG-06: the flag table in the spec has one row per flag of Profile and one column per named profile."""
    flags = [a.name for a in Profile.__attrs_attrs__ if a.name != "name"]
    assert sorted(PROFILE_TABLE) == sorted(flags)
    assert set(PROFILES) == {"4.9.1", "4.9.8", "5.0.0", "5.3.3", "develop"}


@given(version=st.sampled_from(["4.9.1", "4.9.8", "5.0.0", "5.3.3", "develop"]))
def test_profile_table_matches_spec(version):
    """CFG-06: each named profile's flags are its column of the spec's table."""
    event("CFG-06")
    profile = Config(profile=version).profile
    assert {flag: getattr(profile, flag) for flag in PROFILE_TABLE} == {
        flag: by_version[version] for flag, by_version in PROFILE_TABLE.items()}
