"""The POP retry topic of a group and topic (KeyBuilder, spec/15-revive.md)."""

from __future__ import annotations

from model.values.message import RETRY_GROUP_TOPIC_PREFIX

SEPARATOR_V1 = "_"
SEPARATOR_V2 = "+"


def get_pop_retry_topic(topic: str, group: str, v2: bool) -> str:
    """[IV-03] %RETRY%{group}_{topic}, or %RETRY%{group}+{topic} with enableRetryTopicV2."""
    return RETRY_GROUP_TOPIC_PREFIX + group + (SEPARATOR_V2 if v2 else SEPARATOR_V1) + topic


def is_pop_retry_topic_v2(topic: str) -> bool:
    """KeyBuilder.isPopRetryTopicV2: a retry topic with a '+' in it."""
    return topic.startswith(RETRY_GROUP_TOPIC_PREFIX) and SEPARATOR_V2 in topic


def get_retry_flag(topic: str) -> str:
    """ExtraInfoUtil.getRetry: "0" for a normal topic, "1" for a v1 retry topic, "2" for a v2 one."""
    if not topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        return "0"
    return "2" if is_pop_retry_topic_v2(topic) else "1"


def get_real_topic(topic: str, group: str, retry_flag: str) -> str:
    """ExtraInfoUtil.getRealTopic: the topic a handle's message is stored in."""
    if retry_flag == "0":
        return topic
    return get_pop_retry_topic(topic, group, retry_flag == "2")


def parse_normal_topic(topic: str, group: str) -> str:
    """[IV-04] KeyBuilder.parseNormalTopic(topic, cid): the normal topic of a retry topic of this group."""
    if not topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        return topic
    v2_prefix = RETRY_GROUP_TOPIC_PREFIX + group + SEPARATOR_V2
    if topic.startswith(v2_prefix):
        return topic[len(v2_prefix):]
    return topic[len(RETRY_GROUP_TOPIC_PREFIX + group + SEPARATOR_V1):]
