"""``python -m benchmarks [perf|timings|app] [options]``: the performance runner (default), the speed
targets moved out of the tests, or the browser timings of the app."""

import sys

COMMANDS = {"perf": "benchmarks.perf", "timings": "benchmarks.timings", "app": "benchmarks.app_timing"}

args = sys.argv[1:]
name = args.pop(0) if args and args[0] in COMMANDS else "perf"
module = __import__(COMMANDS[name], fromlist=["main"])
sys.exit(module.main(args))
