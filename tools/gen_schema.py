"""Regenerate docs/schema.md from trace_parsers/model.py (`make docs`); --check fails on drift."""
import sys
from pathlib import Path

from trace_parsers.model import schema_markdown

out = Path(__file__).resolve().parents[1] / "docs" / "schema.md"
text = schema_markdown()
if "--check" in sys.argv:
    if not out.exists() or out.read_text() != text:
        sys.exit("docs/schema.md is stale: run `make docs`")
    print("docs/schema.md is up to date")
else:
    out.write_text(text)
    print(f"wrote {out}")
