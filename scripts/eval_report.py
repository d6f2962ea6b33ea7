"""scripts/eval.py's tables: the metrics of a set of scored packs, and one line per task."""

from __future__ import annotations

from typing import Any

from build_set import eligible


def summarise(rows: list[dict[str, Any]]) -> dict[str, float]:
    n = len(rows) or 1
    return {"tasks": len(rows),
            "recall@8": sum(r["recall"] for r in rows) / n,
            "MRR": sum(r["rr"] for r in rows) / n,
            "precision@8": sum(r["precision"] for r in rows) / n,
            "violations": sum(r["violations"] for r in rows),
            "copies": sum(r["copies"] for r in rows),
            "no_terms": sum(bool(r.get("no_terms")) for r in rows),
            "avg_selected": sum(r["selected"] for r in rows) / n}


def print_table(title: str, results: dict[str, list[dict[str, Any]]]) -> None:
    print(f"\n{title}")
    print(f"  {'':15} {'tasks':>5} {'recall@8':>9} {'MRR':>6} {'prec@8':>7} {'viol':>5} "
          f"{'copies':>6} {'no_terms':>8} {'avg_sel':>7}")
    for name, rows in results.items():
        s = summarise(rows)
        print(f"  {name:15} {s['tasks']:5d} {s['recall@8']:9.3f} {s['MRR']:6.3f} "
              f"{s['precision@8']:7.3f} {s['violations']:5d} {s['copies']:6d} "
              f"{s['no_terms']:8d} {s['avg_selected']:7.2f}")


def by_difficulty(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    main = [r for r in rows if r.get("split", "main") == "main"]
    groups = {"easy": [r for r in main if r["difficulty"] == "easy"],
              "hard": [r for r in main if r["difficulty"] == "hard"], "overall": main}
    held_out = [r for r in rows if r.get("split") == "holdout"]
    return groups | ({"held-out": held_out} if held_out else {})


def print_tasks(rows: list[dict[str, Any]], items: list[dict[str, Any]], scorer: Any) -> None:
    print("\nper task (retrieval): recall rr precision | packed keys, * relevant, ! forbidden,"
          " = copy")
    for row, item in zip(rows, items, strict=True):
        wanted = {scorer.group(k) for k in item["relevant"]}
        marks, seen = [], set()
        for key, score in zip(row["picked"], row.get("scores", []), strict=False):
            group = scorer.group(key)
            mark = ("=" if group in seen else "*" if group in wanted else "") + (
                "!" if not eligible(scorer.records[key], item["project"], item["agent"]) else "")
            seen.add(group)
            marks.append(f"{mark}{key}({score:.2f})")
        missing = sorted(wanted - seen)
        print(f"  {row['id']:12} {row['difficulty']:4} {row['recall']:.2f} {row['rr']:.2f} "
              f"{row['precision']:.2f} | {' '.join(marks)}"
              + (f"  MISSING {' '.join(missing)}" if missing else ""))
