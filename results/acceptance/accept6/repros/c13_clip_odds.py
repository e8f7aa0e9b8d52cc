"""How often must c13 (`c13_ppo_epochs.py`) clip? The same program in torch eager
(gymnasium CartPole, torch.multinomial sampling, Adam over E epochs on each rollout), one
seed per run: the fraction of seeds in which some ratio leaves [1 - EPS, 1 + EPS], per lr.
Measured (accept6.md, c13; 200 seeds): lr 0.05: 73.5% (i = 0 alone 56.5%); lr 0.1: 99.5%;
lr 0.2 and 0.3: 100%.
usage: python results/acceptance/accept6/repros/c13_clip_odds.py [seeds]"""
import sys, numpy as np, torch, gymnasium as gym
torch.set_num_threads(1)
I_, E_, B_, T_, G, EPS = 3, 3, 2, 8, 0.9, 0.2
def run(seed, lr):
    g = torch.Generator().manual_seed(seed)
    rng = np.random.default_rng(13)
    W = (rng.normal(size=(2, 4)) * 0.5).astype(np.float32)
    w = torch.tensor(W, requires_grad=True); bb = torch.zeros(2, requires_grad=True)
    opt = torch.optim.Adam([w, bb], lr=lr)
    envs = [gym.make("CartPole-v1") for _ in range(B_)]
    clips = np.zeros((I_, E_))
    for it in range(I_):
        O = np.zeros((B_, T_, 4), np.float32); A = np.zeros((B_, T_), np.int64); R = np.zeros((B_, T_), np.float32)
        for bi, env in enumerate(envs):
            o, _ = env.reset(seed=seed * 1000 + it * 10 + bi); done = False
            for k in range(T_):
                O[bi, k] = o
                with torch.no_grad():
                    p = torch.softmax(torch.tensor(o) @ w.T + bb, -1)
                a = int(torch.multinomial(p, 1, generator=g)); A[bi, k] = a
                if not done:
                    o, r, term, trunc, _ = env.step(a); R[bi, k] = r; done = term or trunc
        ret = np.zeros_like(R); acc = np.zeros(B_, np.float32)
        for k in reversed(range(T_)):
            acc = R[:, k] + G * acc; ret[:, k] = acc
        Ot, At, Av = torch.tensor(O), torch.tensor(A), torch.tensor(ret)
        with torch.no_grad():
            old = torch.distributions.Categorical(logits=Ot @ w.T + bb).log_prob(At)
        for ep in range(E_):
            ratio = (torch.distributions.Categorical(logits=Ot @ w.T + bb).log_prob(At) - old).exp()
            L = -torch.minimum(ratio * Av, ratio.clamp(1 - EPS, 1 + EPS) * Av).mean()
            clips[it, ep] = ((ratio - 1).abs() > EPS).float().mean().item()
            opt.zero_grad(); L.backward(); opt.step()
    return clips
N = int(sys.argv[1]) if len(sys.argv) > 1 else 200
for lr in (0.05, 0.1, 0.2, 0.3):
    cs = [run(s, lr) for s in range(N)]
    anyc = np.mean([c.max() > 0 for c in cs]); i0 = np.mean([c[0].max() > 0 for c in cs])
    print(f"lr={lr}: P(some clipping) = {anyc:.3f} over {N} seeds (at i=0 alone {i0:.3f}); mean clip fraction {np.mean([c.mean() for c in cs]):.4f}", flush=True)
