"""Draw the build engine's state machine as synthesized, for docs/deploy.md:
`python -m benchmarks.build_engine_chart [TEMPLATE] [--out PNG]` (default: cdk.out's stack template, written
to docs/build-engine.png).
Each state is a box in the order Step Functions runs it; solid arrows are `Next`, dashed red ones `Catch`.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from benchmarks.context import REPO_ROOT
from benchmarks.deploy_order import DEFAULT_TEMPLATE

DEFAULT_OUT = REPO_ROOT / "docs" / "build-engine.png"


def engine_definition(template: dict[str, Any]) -> dict[str, Any]:
    """The build engine's ASL, its references replaced by their logical ids."""
    (machine,) = [
        r for k, r in template["Resources"].items()
        if r["Type"] == "AWS::StepFunctions::StateMachine" and k.startswith("ModelBuildEngine")
    ]  # fmt: skip
    parts = machine["Properties"]["DefinitionString"]["Fn::Join"][1]
    text = "".join(p if isinstance(p, str) else re.sub(r"\W", "", json.dumps(p))[:24] for p in parts)
    return dict(json.loads(text))


def layers(definition: dict[str, Any]) -> dict[str, int]:
    """Each state's depth from StartAt along Next and Catch (the longest path, so a chain reads downwards)."""
    depth = {definition["StartAt"]: 0}
    for _ in definition["States"]:
        for name, state in definition["States"].items():
            if name not in depth:
                continue
            for target in [state.get("Next")] + [c["Next"] for c in state.get("Catch", [])]:
                if target and depth.get(target, -1) < depth[name] + 1 and target != definition["StartAt"]:
                    depth[target] = depth[name] + 1
    return depth


def draw(definition: dict[str, Any], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    depth = layers(definition)
    rows: dict[int, list[str]] = {}
    for name in definition["States"]:
        rows.setdefault(depth[name], []).append(name)
    where = {
        name: (column - (len(names) - 1) / 2, -row)
        for row, names in rows.items()
        for column, name in enumerate(names)
    }
    figure, axes = plt.subplots(figsize=(9, 1.4 * len(rows) + 1))
    for name, state in definition["States"].items():
        x, y = where[name]
        resource = str(state.get("Resource", ""))
        resource = (
            resource.rpartition(":")[2] if ":states:::" in resource else f"{resource.split('(')[0]} function"
        )
        resource = "the engine's function" if resource.startswith("FnGetAtt") else resource
        resource = resource if "Resource" in state else state["Type"]
        timeout = f"\ntimeout {state['TimeoutSeconds'] // 60} min" if "TimeoutSeconds" in state else ""
        colour = "#fde2e1" if state["Type"] == "Fail" or "Report" in name else "#e3effc"
        colour = "#dff3e3" if name.startswith("Signal") else colour
        axes.text(x, y, f"{name}\n{resource}{timeout}", ha="center", va="center", fontsize=9,
                  bbox={"boxstyle": "round", "facecolor": colour, "edgecolor": "#555"})  # fmt: skip
        # The look-up's Next skips the stages: drawn as an arc round them, on the left, labelled.
        skips = "headObject" in resource
        edges = [(state.get("Next"), "-", "#333", "found: signal at once" if skips else "")]
        edges += [(c["Next"], "--", "#c0392b", "catch") for c in state.get("Catch", [])]
        for target, style, colour, label in edges:
            if not target:
                continue
            tx, ty = where[target]
            bend = label.startswith("found")
            # An edge past a row goes round that row's boxes on the right, from side to side.
            skip = not bend and ty < y - 1
            start, end = ((x - 0.22, y), (tx - 0.38, ty)) if bend else ((x, y - 0.25), (tx, ty + 0.25))
            start, end = ((x + 0.6, y), (tx + 0.2, ty)) if skip else (start, end)
            rad = 0.3 if bend else -0.35 if skip else 0
            axes.annotate("", xy=end, xytext=start, arrowprops={
                "arrowstyle": "->", "linestyle": style, "color": colour,
                "connectionstyle": f"arc3,rad={rad}"})  # fmt: skip
            if label:
                lx = min(x, tx) - 0.8 if bend else (x + tx) / 2
                axes.text(lx, (y + ty) / 2, label, fontsize=7, color=colour)
    xs = [x for x, _ in where.values()]
    axes.set_xlim(min(xs) - 1.4, max(xs) + 1.2)
    axes.set_ylim(-len(rows) + 0.4, 0.6)
    axes.axis("off")
    axes.set_title("The deploy's model build state machine (synthesized definition)", fontsize=11)
    figure.tight_layout()
    figure.savefig(out, dpi=110)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("template", nargs="?", type=Path, default=DEFAULT_TEMPLATE)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    if not args.template.is_file():
        print(f"error: {args.template}: no template; allowed: a synthesized stack template (make synth)")
        return 1
    draw(engine_definition(json.loads(args.template.read_text())), args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
