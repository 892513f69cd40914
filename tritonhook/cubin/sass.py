"""SASS of a cubin, through nvdisasm (`binaries.run_nvdisasm`; Triton's bundled one unless told otherwise).

`disassemble` gives the instruction list per kernel; `opcode_histogram` and `normalized_sass` turn it into
something to count and to diff (addresses and constants masked, so that a moved kernel still compares equal);
`inner_loops` finds the loops in it.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import re
from typing import Iterable

from ..errors import TritonhookError
from ..binaries import run_nvdisasm


@dataclasses.dataclass(frozen=True)
class Instruction:
    offset: int
    predicate: str
    opcode: str
    operands: str
    control_flow: bool = False

    @property
    def base_opcode(self) -> str:
        return self.opcode.split(".", 1)[0]

    def text(self) -> str:
        return " ".join(part for part in (self.predicate, self.opcode, self.operands) if part)


def sass_text(data: bytes, *, nvdisasm: str | None = None, label: str = "") -> str:
    """nvdisasm's own listing of the code sections, as a person reads it."""
    return run_nvdisasm(data, ["-c"], nvdisasm=nvdisasm, label=label)


def disassemble(data: bytes, *, nvdisasm: str | None = None, label: str = "") -> dict[str, list[Instruction]]:
    """kernel (function) name -> its instructions, from nvdisasm's JSON output."""
    return parse_sass_json(run_nvdisasm(data, ["-json", "-c"], nvdisasm=nvdisasm, label=label), label=label)


def parse_sass_json(text: str, *, label: str = "") -> dict[str, list[Instruction]]:
    try:
        functions = json.loads(text)[1]
        return {function["function-name"]: [_instruction(function["start"] + 16 * index, raw)
                                             for index, raw in enumerate(function["sass-instructions"])]
                for function in functions}
    except (ValueError, LookupError, TypeError) as exc:
        raise TritonhookError(f"{label or 'cubin'}: unexpected nvdisasm JSON ({exc})") from None


def _instruction(offset: int, raw: dict) -> Instruction:
    flow = raw.get("other-attributes", {}).get("control-flow") == "True"
    return Instruction(offset, raw.get("predicate", ""), raw["opcode"], raw.get("operands", ""), flow)


def opcode_histogram(instructions: Iterable[Instruction], *, full: bool = False) -> collections.Counter:
    """Counts of base opcodes (`IMAD`), or of full mnemonics with modifiers (`IMAD.MOV.U32`) when `full`."""
    return collections.Counter(i.opcode if full else i.base_opcode for i in instructions)


def cubin_histogram(sass: dict[str, list[Instruction]]) -> collections.Counter:
    """Base-opcode counts over every function of a disassembled cubin: a kernel's device functions are its code too."""
    return opcode_histogram(i for instructions in sass.values() for i in instructions)


def opcode_changes(before: collections.Counter, after: collections.Counter) -> list[tuple[str, int, int]]:
    """(opcode, count before, count after) of every opcode whose count changed, largest change first (then by
    name): what `tritonhook diff --sass` tables and what a timed row's `CubinDelta` quotes the top of."""
    rows = [(op, before[op], after[op]) for op in set(before) | set(after) if before[op] != after[op]]
    return sorted(rows, key=lambda row: (-abs(row[2] - row[1]), row[0]))


_HEX = re.compile(r"\b0x[0-9a-f]+\b")


def inner_loops(instructions: list[Instruction]) -> list[list[Instruction]]:
    """The innermost loops of a kernel's SASS, in code order: each the instructions from a branch's earlier target
    through the branch back to it, holding no other such loop. A kernel's steady state (an attention's K/V step, a
    GEMM's k-loop) is one of them; a forward branch inside one (a masked arm skipped at run time) stays in its body."""
    index = {instruction.offset: number for number, instruction in enumerate(instructions)}
    spans = sorted({(index[target], number) for number, instruction in enumerate(instructions)
                    if instruction.control_flow and instruction.base_opcode in ("BRA", "BRX", "JMP")
                    for target in (int(token, 16) for token in _HEX.findall(instruction.operands))
                    if target < instruction.offset and target in index})  # not the `BRA .` that ends a kernel
    innermost = [(first, last) for first, last in spans
                 if not any((a, b) != (first, last) and first <= a and b <= last for a, b in spans)]
    return [instructions[first:last + 1] for first, last in innermost]


def normalized_sass(instructions: list[Instruction]) -> list[str]:
    """One line per instruction with code addresses replaced by label numbers, so that two kernels that differ
    only where their code sits diff as equal."""
    targets = sorted({int(token, 16) for i in instructions if i.control_flow for token in _HEX.findall(i.operands)})
    labels = {target: f"L{number}" for number, target in enumerate(targets)}
    lines = []
    for instruction in instructions:
        text = instruction.text()
        if instruction.control_flow:
            text = _HEX.sub(lambda m: labels[int(m.group(0), 16)], text)
        lines.append(text)
    return lines
