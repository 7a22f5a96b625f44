"""``envcheck scan``: every Python environment on this machine that a user trains from, each with
the doctor's verdict.

  discover   where environments are: the running interpreter, PATH, virtualenv folders, pyenv,
             conda, Jupyter kernels; each place a candidate interpreter
  identify   which candidates are one environment (a symlink, a shim, a kernel that points at a
             venv): each interpreter says what it is, and candidates that agree become one
  run        the doctor on each environment, in parallel, each with its own timeout, all within
             the scan's budget
"""
