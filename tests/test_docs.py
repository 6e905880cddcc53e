"""docs/architecture.md stays the design a newcomer can follow: every engine module is in it,
and code points at its sections, never at a spec outside the repository (issue 9, item 9)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from kernelopt.core.layout import ENGINE_PACKAGES, PACKAGES

ROOT = Path(__file__).resolve().parents[1]
ARCHITECTURE = ROOT / "docs" / "architecture.md"
# ENGINE_PACKAGES: each of their modules is named in docs/architecture.md. PACKAGES: every subpackage,
# where no comment may point at the spec.
SPEC_POINTER = "SPEC " + "§"  # split, so that this file does not match itself
SECTION_POINTER = re.compile(r"docs/architecture\.md, ([^)\n]+)\)")


def _package_dir(name: str) -> Path:
    assert (ROOT / "kernelopt" / name / "__init__.py").is_file(), f"package {name} not found"
    return ROOT / "kernelopt" / name


def test_the_layout_lists_every_subpackage():
    on_disk = {p.parent.name for p in (ROOT / "kernelopt").glob("*/__init__.py")}
    assert on_disk == set(PACKAGES) and len(PACKAGES) == len(set(PACKAGES))


def _modules(package: str) -> list[Path]:
    return sorted(p for p in _package_dir(package).rglob("*.py") if "__pycache__" not in p.parts)


def _headings() -> set[str]:
    return {line.lstrip("#").strip() for line in ARCHITECTURE.read_text().splitlines() if line.startswith("#")}


@pytest.mark.parametrize("package", ENGINE_PACKAGES)
def test_architecture_names_every_module_of_the_stage_packages(package):
    text = ARCHITECTURE.read_text()
    missing = [f"{package}/{p.relative_to(_package_dir(package)).as_posix()}" for p in _modules(package)
               if p.name != "__init__.py"
               and f"{package}/{p.relative_to(_package_dir(package)).as_posix()}" not in text]
    assert not missing, f"docs/architecture.md does not mention {missing}: say where they fit in the design"


def test_no_code_points_at_the_spec_outside_the_repository():
    offenders = [f"{p.relative_to(ROOT)}:{n}" for package in PACKAGES for p in _modules(package)
                 for n, line in enumerate(p.read_text().splitlines(), 1) if SPEC_POINTER in line]
    offenders += [f"README.md:{n}" for n, line in enumerate((ROOT / "README.md").read_text().splitlines(), 1)
                  if SPEC_POINTER in line]
    assert not offenders, f"point these at a section of docs/architecture.md instead: {offenders}"


def test_every_pointer_into_the_architecture_names_one_of_its_sections():
    headings = _headings()
    sources = [p for package in PACKAGES for p in _modules(package)] + [ROOT / "README.md"]
    pointers = {(str(p.relative_to(ROOT)), m.group(1).strip()) for p in sources
                for m in SECTION_POINTER.finditer(p.read_text())}
    assert len(pointers) >= 10  # the comments that used to point at the spec
    dangling = sorted((where, section) for where, section in pointers if section not in headings)
    assert not dangling, f"no such section in docs/architecture.md: {dangling}"
