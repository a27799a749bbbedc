"""What bench/'s measurement scripts share: writing their Markdown table."""
import os


def data_root():
    """The folder of the public data sets (docs/data.md): $IMPULSE_DATA when set, else
    ../shared/data beside the repository when it exists (CI's copy), else data/external/
    in the repository (where `bash data/fetch.sh` puts them)."""
    env = os.environ.get("IMPULSE_DATA")
    if env:
        return env
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    shared = os.path.join(repo, "..", "shared", "data")
    return shared if os.path.isdir(shared) else os.path.join(repo, "data", "external")


def write_markdown(path, lines):
    """lines as one Markdown file at path (its folder made), and on stdout"""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
