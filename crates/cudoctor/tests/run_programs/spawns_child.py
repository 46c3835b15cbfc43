# A Python process that starts another: both must report.
import subprocess
import sys

subprocess.run([sys.executable, "-c", "print('child ran')"], check=True)
