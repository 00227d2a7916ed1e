"""The project's test and emulation tools (not the user API):

- ``check``: the command line harness the integration tests use;
- ``emulate``: runs the tensor-core kernel's IR on the CPU, warp by warp;
- ``emulate_wgmma``: the sm_90a kernel's warpgroups, barriers and async
  wgmma in that emulator;
- ``logs``: the package's log messages, kept for a test to count;
- ``run_example``: the README's main job.
"""
