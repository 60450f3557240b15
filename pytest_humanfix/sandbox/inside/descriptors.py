"""Where every process of an execution finds the harness's descriptors, put there by
`child.py` before its program runs (docs/sandbox.md#the-tests-and-the-candidate-apart): 1 and 2
its output files, CALLS_IN and CALLS_OUT the pipes to the other process, STATUS a pipe only the
harness reads, PROGRAM the program it runs."""

CALLS_IN, CALLS_OUT, STATUS, PROGRAM = 3, 4, 5, 6
# The descriptors a process gets, in this order, at these numbers.
DESCRIPTORS = (1, 2, CALLS_IN, CALLS_OUT, STATUS, PROGRAM)
