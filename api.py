def compile(*a, **k): raise NotImplementedError
