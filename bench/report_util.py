"""What bench/'s measurement scripts share: writing their Markdown table."""
import os


def write_markdown(path, lines):
    """lines as one Markdown file at path (its folder made), and on stdout"""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
