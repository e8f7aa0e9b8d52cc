"""enable_index_ops=False: the gradient of attention over a 2-D window
k[max(0, b-1):b+1, 0:t+1].flatten(0, 1) fails at run time (numpy: cannot reshape array of
size 6 into shape (2,4,3)); c12 with this flag."""
import sys, dataclasses, os
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from harness import make_cfg
import c12_2d_attention_grad as m
be = sys.argv[1] if len(sys.argv) > 1 else "numpy"
cfg = dataclasses.replace(make_cfg(f"{be}:default", "/tmp/ioff"), enable_index_ops=False)
for n, g, w, tol in m.program(cfg):
    import numpy as np
    print(n, float(np.abs(np.asarray(g, np.float64) - w).max()) <= tol)
