"""The rule x client matrix (reports/clients.py computes it) for the Markdown summary and the HTML page (a section
string the page places): the model, the reference Java client, then the other clients. Its PNG is reports/heat_map.py's
(this module imports no matplotlib: the documentation site's build renders Markdown only)."""

from __future__ import annotations

from reportformat.escape import to_html, to_markdown
from reportformat.lines import PROTOCOLS, get_client_protocol
from reports.results import EXERCISED, GAP, plural
from reports.spec_rules import slugify

MODEL = "model"  # reports/clients.py's name of the model's column
REFERENCE = ("rocketmq-client-java", "4.9.8")  # the client the model is
# Words that render in every font and terminal; LEGEND says what each means.
MARK = {
    "conforms": "conforms",
    "deviates": "deviates",
    "not applicable": "n/a",
    "not judged": "not judged",
    "unavailable": "not run",
    EXERCISED: "exercised",
    GAP: "gap",
}
NO_VERDICT = "—"
LEGEND = (
    "conforms: every run that judged the rule saw the client keep it; deviates: a run saw it break the rule (the "
    "deviation and its counterexample follow); n/a: the client lacks the feature; not judged: no run can judge the "
    "rule yet (conformance/checker/rules.py says why); not run: the client could not run here; "
    f"{NO_VERDICT}: no verdict recorded for this client and rule; the model's column: its properties' test cases."
)
CSS = {"conforms": "ok", EXERCISED: "ok", "deviates": "fail", GAP: "gap", "not applicable": "na", "not judged": "na"}
MAX_COUNTEREXAMPLE = 400
INLINE = 300  # characters of a name or rule id shown
FULL_COPY = "the Parquet table client_matrix"


def get_label(name: str, version: str) -> str:
    if name == MODEL:
        return "model (its properties)"
    protocol = get_client_protocol(name, version)
    return f"{name} {version}" + (" (reference)" if (name, version) == REFERENCE else "") + \
        (f" [{protocol}]" if protocol != PROTOCOLS[0] else "")


ANCHOR = "clients"


def get_client_anchor(client: tuple[str, str]) -> str:
    """The anchor of a client's column (``#client-rocketmq-client-cpp-123``)."""
    return "client-" + slugify(f"{client[0]} {client[1]}".replace(".", ""))


def get_clients(matrix: list[dict]) -> list[tuple[str, str]]:
    """The columns: the model, then the clients grouped by protocol (4.x remoting with the reference first, 5.x
    remoting POP, 5.x gRPC: their labels name the group), by name within a group."""
    found = {(row["client_name"], row["client_version"]) for row in matrix}
    return sorted(found, key=lambda c: (c[0] != MODEL, PROTOCOLS.index(get_client_protocol(*c)), c != REFERENCE, c))


def get_unavailable(matrix: list[dict]) -> dict[tuple[str, str], str]:
    """Clients that could not run in any run, with the reason (a client with any verdict is not listed)."""
    judged = {(r["client_name"], r["client_version"]) for r in matrix if r["rule_id"] is not None}
    return {
        (r["client_name"], r["client_version"]): r["detail"] or ""
        for r in matrix
        if r["rule_id"] is None and (r["client_name"], r["client_version"]) not in judged
    }


def get_judged_rules(matrix: list[dict]) -> list[str]:
    """Rules some real client conforms to or deviates from: the rows worth a reader's screen."""
    return sorted({r["rule_id"] for r in matrix if r["status"] in ("conforms", "deviates") and r["rule_id"]})


def index_matrix(matrix: list[dict]) -> dict[tuple[str, str, str], dict]:
    return {(r["client_name"], r["client_version"], r["rule_id"]): r for r in matrix if r["rule_id"]}


def get_cell_text(row: dict | None, client: tuple[str, str], unavailable: dict) -> str:
    if row is None:  # no verdict of this client on this rule: it did not run, or no run judged the rule
        return "not run" if client in unavailable else NO_VERDICT
    if client[0] == MODEL and row["status"] == EXERCISED:
        return f"exercised, {plural(row['verdicts'], 'case')}"
    return MARK.get(row["status"], row["status"])


def get_deviations(matrix: list[dict]) -> list[dict]:
    return sorted((r for r in matrix if r["status"] == "deviates"), key=lambda r: (r["client_name"], r["rule_id"]))


def render_client_markdown(matrix: list[dict]) -> list[str]:
    """The summary's section: rules some client was judged on x clients, the clients that could not run, and each
    deviation with its shortest counterexample."""
    if not matrix:
        return ["", "No conformance verdicts in the warehouse: no rule x client matrix."]
    clients, cells, missing = get_clients(matrix), index_matrix(matrix), get_unavailable(matrix)
    lines = [
        "",
        "## Rules x clients",
        "",
        "| rule | " + " | ".join(to_markdown(get_label(*c)) for c in clients) + " |",
        "|---|" + "---|" * len(clients),
    ]
    for rule in get_judged_rules(matrix):
        lines.append(
            f"| {to_markdown(rule)} | "
            + " | ".join(to_markdown(get_cell_text(cells.get((*c, rule)), c, missing)) for c in clients)
            + " |"
        )
    lines += ["", LEGEND.replace("conformance/checker/rules.py", "`conformance/checker/rules.py`")]
    lines += [f"- {to_markdown(get_label(*c))}: not run — {to_markdown(why, 500)}" for c, why in missing.items()]
    deviations = get_deviations(matrix)
    if deviations:
        lines += ["", "### Deviations", ""]
    for row in deviations:
        example = to_markdown(row["counterexample"], MAX_COUNTEREXAMPLE, FULL_COPY)
        lines.append(
            f"- **{to_markdown(row['rule_id'])}** {to_markdown(get_label(row['client_name'], row['client_version']))}: "
            f"{to_markdown(row['detail'], 300, FULL_COPY)}"
            + (f" — counterexample: {example}" if example else "")
        )
    return lines


def render_client_section(matrix: list[dict]) -> str:
    """The HTML page's section (a string to place anywhere in the body): every rule with a verdict x clients, each
    cell titled with its detail, and the deviations with their counterexamples."""
    if not matrix:
        return f'<h2 id="{ANCHOR}">Rules x clients</h2><p>No conformance verdicts in the warehouse.</p>'
    clients, cells, unavailable = get_clients(matrix), index_matrix(matrix), get_unavailable(matrix)
    rules = sorted({r["rule_id"] for r in matrix if r["rule_id"]})
    head = "".join(f'<th id="{get_client_anchor(c)}">{to_html(get_label(*c), INLINE)}</th>' for c in clients)
    body = []
    for rule in rules:
        tds = []
        for client in clients:
            row = cells.get((*client, rule))
            css = CSS.get(row["status"] if row else "", "")
            title = to_html((row or {}).get("detail"), INLINE)
            tds.append(f'<td class="{css}" title="{title}">{to_html(get_cell_text(row, client, unavailable))}</td>')
        body.append(f"<tr><td>{to_html(rule, INLINE)}</td>{''.join(tds)}</tr>")
    missing = [
        f"<p>{to_html(get_label(*c), INLINE)}: not run — {to_html(why, pointer=FULL_COPY)}</p>"
        for c, why in unavailable.items()
    ]
    deviations = [
        f"<h3>{to_html(r['rule_id'], INLINE)} · "
        f"{to_html(get_label(r['client_name'], r['client_version']), INLINE)}</h3>"
        f"<p>{to_html(r['detail'], pointer=FULL_COPY)}</p>"
        f"<pre>{to_html(r['counterexample'], pointer=FULL_COPY)}</pre>"
        for r in get_deviations(matrix)
    ]
    return "\n".join(
        [
            f'<h2 id="{ANCHOR}">Rules x clients: what each client does at each rule</h2>',
            f"<table><tr><th>rule</th>{head}</tr>",
            *body,
            "</table>",
            f'<p class="legend">{to_html(LEGEND)}</p>',
            *missing,
            "<h2>Deviations of clients</h2>",
            *deviations,
        ]
    )
