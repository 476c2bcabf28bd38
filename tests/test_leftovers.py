"""The end-of-run check in conftest.py: a process left running under pytest's temp folder fails the run."""

from pathlib import Path

pytest_plugins = ["pytester"]

CONFTEST = (Path(__file__).parent / "conftest.py").read_text()


def test_a_process_left_behind_fails_the_run(pytester):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(
        """
        import subprocess

        def test_leaves_a_process(tmp_path):
            subprocess.Popen(["sleep", "300"], cwd=tmp_path)
        """
    )
    result = pytester.runpytest_subprocess()
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*the tests left these behind*", "*process * still running: sleep 300*"])


def test_a_clean_run_passes(pytester):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile("def test_nothing(tmp_path):\n    (tmp_path / 'x').write_text('x')\n")
    assert pytester.runpytest_subprocess().ret == 0
