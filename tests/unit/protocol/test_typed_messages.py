"""protocol/typed/ is current with the schemas, and a type checker uses it to catch a misspelt key."""
import subprocess
import sys
from pathlib import Path

from tierlog.protocol import typed_gen

ROOT = Path(__file__).resolve().parents[3]


def test_the_typed_messages_are_generated_from_the_current_schemas():
    assert typed_gen.main(["--check"]) == 0, "run: python -m tierlog.protocol.typed_gen"


def test_a_misspelt_or_mistyped_key_is_a_type_error(tmp_path):
    snippet = tmp_path / "uses_offset_commit.py"
    snippet.write_text(
        "from tierlog.protocol.typed.offset_commit import OffsetCommitRequest\n"
        "def generation(request: OffsetCommitRequest) -> int:\n"
        "    return request['GenerationIdOrMemberEpochh']\n"
        "def with_default(request: OffsetCommitRequest) -> int:\n"
        "    return request.get('RetentionTimeMss', -1)\n"
        "def group(request: OffsetCommitRequest) -> int:\n"
        "    return request['GroupId']\n")
    result = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", "--follow-imports=silent",
                             "--config-file", "/dev/null", str(snippet)], cwd=ROOT, capture_output=True,
                            text=True, timeout=300, check=False, env={"MYPYPATH": str(ROOT / "src"),
                                                                        "PATH": "/usr/bin:/bin"})
    out = result.stdout
    assert 'has no key "GenerationIdOrMemberEpochh"' in out, out
    assert ':5: error: Incompatible return value type (got "object", expected "int")' in out, out   # .get
    assert 'Incompatible return value type (got "str", expected "int")' in out, out
