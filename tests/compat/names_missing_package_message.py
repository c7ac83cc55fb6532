# What a user with only ember-tensor-core sees: every spelling names the package.

for stmt in ("import ember.nn", "from ember import nn", "import ember.utils.data"):
    try:
        exec(stmt, {})
        print(stmt, "-> installed")
    except ModuleNotFoundError as e:
        assert "needs the ember-" in str(e) and "pip install ember-" in str(e), str(e)
        print(stmt, "->", e)
print("ok")
