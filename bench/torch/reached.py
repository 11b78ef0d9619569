"""Exit 0 when strata's train.log (flushed every line, unlike metrics.jsonl)
has a validation line with accuracy at or above TARGET, else 1.
  reached.py RUN_DIR/train.log TARGET"""
import re
import sys

try:
    text = open(sys.argv[1]).read()
except OSError:
    sys.exit(1)
accs = [float(a) for a in re.findall(r"validation:.* accuracy ([0-9.]+)", text)]
sys.exit(0 if any(a >= float(sys.argv[2]) for a in accs) else 1)
