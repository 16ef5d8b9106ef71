"""The result of a transition that also answers something: a (new state, answer) pair plus the rules it used."""

from __future__ import annotations


class Outcome(tuple):
    """`(state, value)` — unpacks as a pair — with `.rules`, the ids of the spec rules the step exercised.

    `pq, offset = remove_message(...)` reads naturally; properties call `hypothesis.event` on `outcome.rules`.
    """

    rules: tuple[str, ...]

    def __new__(cls, state: object, value: object, rules: tuple[str, ...]) -> Outcome:
        outcome = super().__new__(cls, (state, value))
        outcome.rules = rules
        return outcome

    @property
    def state(self) -> object:
        return self[0]

    @property
    def value(self) -> object:
        return self[1]

    def __repr__(self) -> str:
        return f"Outcome(value={self[1]!r}, rules={self.rules!r})"
