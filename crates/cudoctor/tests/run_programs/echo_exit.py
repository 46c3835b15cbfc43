# Reads stdin, echoes it on stdout, writes to stderr, exits with the code given.
import sys

data = sys.stdin.read()
sys.stdout.write("got: %s" % data)
sys.stderr.write("to stderr\n")
sys.exit(int(sys.argv[1]))
