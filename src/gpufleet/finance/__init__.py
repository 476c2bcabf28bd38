"""The answers finance gets about whole stacks: each runs the program (gpufleet.plan) and prices what it declares
with the cost engine (gpufleet.cost).

    stack      = one stack's estimate (the program's resources, the stack's usage)
    compare    = the options of `cost compare`, ranked; tokens = cost per million tokens
    commitment = the subscription break-even; reconcile = a bill against the estimate
    allstacks  = every stack at once; report, exports = what finance reads (HTML, CSV, FOCUS)
"""
