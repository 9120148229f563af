import envgym


def test_all_is_sorted_and_complete():
    assert envgym.__all__ == sorted(envgym.__all__)
    for name in envgym.__all__:
        assert hasattr(envgym, name), name


def test_base_import_pulls_no_heavy_extras():
    import subprocess
    import sys

    heavy = ("torch", "transformers", "playwright", "docker")
    code = f"import envgym, sys; print(sorted(m for m in {heavy!r} if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
