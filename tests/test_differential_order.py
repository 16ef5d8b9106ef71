"""The differential comparison sorts each backend's stored copies the same way whatever order a backend lists a
copy's properties in (seen in CI: two delayed copies swapped places because the real broker and the model order
REAL_TOPIC, UNIQ_KEY, DELAY and TAGS differently)."""

from differential.example import get_canonical_key

# In normalise_landed's field order: the properties come before the body.
REAL = [{"topic": "T", "queueOffset": None,
         "properties": {"REAL_TOPIC": "T", "UNIQ_KEY": key, "DELAY": delay, "TAGS": "a"}, "body": f"body-{key}"}
        for key, delay in (("U6", "2"), ("U7", "1"))]
MODEL = [{"topic": "T", "queueOffset": None,
          "properties": {"REAL_TOPIC": "T", "TAGS": "a", "DELAY": delay, "UNIQ_KEY": key}, "body": f"body-{key}"}
         for key, delay in (("U7", "1"), ("U6", "2"))]


def test_copies_sort_alike_whatever_their_property_order():
    assert sorted(REAL, key=repr) != sorted(MODEL, key=repr)  # the key this replaces
    assert sorted(REAL, key=get_canonical_key) == sorted(MODEL, key=get_canonical_key)
