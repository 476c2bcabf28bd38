"""The Tencent scaler function (SCF): its code (index.py, standard library only) and its package (package.py)."""
