"""Stand-in for ansible-test's get-pip.py bootstrap script.

ansible-test downloads get-pip.py from a host this machine cannot reach, then
runs it inside an empty virtual environment with pip install arguments.  This
script does the same job with Python's bundled ensurepip wheel and the package
index pip is configured for.  scripts/setup.sh copies it into ansible-test's cache.
"""
import subprocess
import sys

subprocess.check_call([sys.executable, '-m', 'ensurepip', '--upgrade'])
args = [arg for arg in sys.argv[1:] if arg not in ('--no-setuptools', '--no-wheel')]
sys.exit(subprocess.call([sys.executable, '-m', 'pip', 'install'] + args))
