"""The one topic and the one consumer group the modelled cluster runs."""

from __future__ import annotations

GROUP = "please_rename_unique_group_name"


TOPIC = "TopicTest"
