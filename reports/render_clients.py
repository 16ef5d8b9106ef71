"""The rule x client matrix (reports/clients.py computes it) for the Markdown summary, the HTML page (a section
string the page places) and a PNG heat map: the model, the reference Java client, then the other clients."""

from __future__ import annotations

import html
import io

from reports.results import EXERCISED, GAP, cut, printable
from runenv.report_format import PROTOCOLS, get_client_protocol

MODEL = "model"  # reports/clients.py's name of the model's column
REFERENCE = ("rocketmq-client-java", "4.9.8")  # the client the model is
MARK = {
    "conforms": "✅ conforms",
    "deviates": "❌ deviates",
    "not applicable": "n/a",
    "not judged": "·",
    "unavailable": "not run",
    EXERCISED: "✅ exercised",
    GAP: "❌ gap",
}
MAX_COUNTEREXAMPLE = 400


def get_label(name: str, version: str) -> str:
    if name == MODEL:
        return "model (its properties)"
    protocol = get_client_protocol(name, version)
    return f"{name} {version}" + (" (reference)" if (name, version) == REFERENCE else "") + \
        (f" [{protocol}]" if protocol != PROTOCOLS[0] else "")


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
        return "not run" if client in unavailable else ""
    if client[0] == MODEL and row["status"] == EXERCISED:
        return f"✅ {row['verdicts']} case" + ("s" if row["verdicts"] != 1 else "")
    return MARK.get(row["status"], row["status"])


def get_deviations(matrix: list[dict]) -> list[dict]:
    return sorted((r for r in matrix if r["status"] == "deviates"), key=lambda r: (r["client_name"], r["rule_id"]))


def render_client_markdown(matrix: list[dict]) -> list[str]:
    """The summary's section: rules some client was judged on x clients, the clients that could not run, and each
    deviation with its shortest counterexample."""
    if not matrix:
        return ["", "## Rules x clients", "", "No conformance verdicts in the warehouse."]
    clients, cells, missing = get_clients(matrix), index_matrix(matrix), get_unavailable(matrix)
    lines = [
        "",
        "## Rules x clients",
        "",
        "| rule | " + " | ".join(get_label(*c) for c in clients) + " |",
        "|---|" + "---|" * len(clients),
    ]
    for rule in get_judged_rules(matrix):
        lines.append(
            f"| {rule} | " + " | ".join(get_cell_text(cells.get((*c, rule)), c, missing) for c in clients) + " |"
        )
    lines += ["", "n/a: the client lacks the feature; ·: no run judges it (conformance/checker/rules.py says why)."]
    lines += [f"- {get_label(*c)}: not run — {printable(why)}" for c, why in missing.items()]
    deviations = get_deviations(matrix)
    if deviations:
        lines += ["", "### Deviations", ""]
    for row in deviations:
        example = cut(row["counterexample"], "the Parquet table client_matrix", MAX_COUNTEREXAMPLE)
        lines.append(
            f"- **{row['rule_id']}** {get_label(row['client_name'], row['client_version'])}: "
            f"{cut(row['detail'], 'the Parquet table client_matrix', 300)}"
            + (f" — counterexample `{example}`" if example else "")
        )
    return lines


def render_client_section(matrix: list[dict]) -> str:
    """The HTML page's section (a string to place anywhere in the body): every rule with a verdict x clients, each
    cell titled with its detail, and the deviations with their counterexamples."""
    if not matrix:
        return "<h2>Rules x clients</h2><p>No conformance verdicts in the warehouse.</p>"
    clients, cells, unavailable = get_clients(matrix), index_matrix(matrix), get_unavailable(matrix)
    rules = sorted({r["rule_id"] for r in matrix if r["rule_id"]})
    head = "".join(f"<th>{html.escape(get_label(*c))}</th>" for c in clients)
    body = []
    for rule in rules:
        tds = []
        for client in clients:
            row = cells.get((*client, rule))
            css = {"deviates": "fail", GAP: "gap"}.get(row["status"] if row else "", "")
            title = html.escape(printable((row or {}).get("detail") or ""))
            tds.append(f'<td class="{css}" title="{title}">{html.escape(get_cell_text(row, client, unavailable))}</td>')
        body.append(f"<tr><td>{html.escape(rule)}</td>{''.join(tds)}</tr>")
    missing = [
        f"<p>{html.escape(get_label(*c))}: not run — {html.escape(printable(why))}</p>"
        for c, why in unavailable.items()
    ]
    deviations = [
        f"<h3>{html.escape(r['rule_id'])} · {html.escape(get_label(r['client_name'], r['client_version']))}</h3>"
        f"<p>{html.escape(cut(r['detail'], 'the Parquet table client_matrix'))}</p>"
        f"<pre>{html.escape(cut(r['counterexample'], 'the Parquet table client_matrix'))}</pre>"
        for r in get_deviations(matrix)
    ]
    return "\n".join(
        [
            "<h2>Rules x clients</h2>",
            f"<table><tr><th>rule</th>{head}</tr>",
            *body,
            "</table>",
            *missing,
            "<h2>Deviations of clients</h2>",
            *deviations,
        ]
    )


COLOURS = {
    "conforms": "#7bc47f",
    "deviates": "#e05555",
    "not applicable": "#c8c8c8",
    "not judged": "#f4f4f4",
    EXERCISED: "#7bc47f",
    GAP: "#f4a3a3",
    "unavailable": "#ffffff",
}


def render_client_heat_map(matrix: list[dict]) -> bytes:
    """PNG: the rules some client was judged on (rows) x clients (columns), a colour and a mark per cell."""
    from matplotlib.colors import to_rgb

    from reports.heat_map import import_pyplot

    plt = import_pyplot()
    clients, cells = get_clients(matrix) or [("(no verdicts)", "")], index_matrix(matrix)
    rules = get_judged_rules(matrix) or ["(none)"]
    grid = [
        [to_rgb(COLOURS.get((cells.get((*c, r)) or {}).get("status", "unavailable"), "#ffffff")) for c in clients]
        for r in rules
    ]
    width, height = 2.5 + 1.6 * len(clients), 1.6 + 0.26 * len(rules)
    figure, axes = plt.subplots(figsize=(width, height))
    figure.subplots_adjust(left=0.9 / width, right=1 - 0.2 / width, bottom=0.2 / height, top=1 - 1.0 / height)
    axes.imshow(grid, aspect="auto")
    axes.set_xticks(range(len(clients)), [get_label(*c).replace(" (", "\n(") for c in clients], fontsize=7)
    axes.xaxis.tick_top()
    axes.set_yticks(range(len(rules)), rules, fontsize=7)
    marks = {"conforms": "✓", "deviates": "✗", "not applicable": "n/a", EXERCISED: "✓", GAP: "gap"}
    for row, rule in enumerate(rules):
        for col, client in enumerate(clients):
            status = (cells.get((*client, rule)) or {}).get("status", "unavailable")
            axes.text(col, row, marks.get(status, ""), ha="center", va="center", fontsize=7)
    axes.set_title("Spec rules x clients (✓ conforms / exercised, ✗ deviates, n/a, blank: not judged)", fontsize=9)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110)
    plt.close(figure)
    return buffer.getvalue()
