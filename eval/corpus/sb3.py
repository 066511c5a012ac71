"""stable-baselines3: RL policies' forward, _predict, evaluate_actions, critics.

Policies are built directly from gymnasium spaces (no environment, no rollout).  The
observation space fixes every feature size, so the three shapes are batches of 2 -> 3 -> 4
observations (the number of parallel environments or a minibatch), as in real use.
"""

from __future__ import annotations

import torch

LIBRARY = "stable_baselines3"
DIST = "stable-baselines3==2.9.2"

OBS = 6
N = (2, 3, 4)


def _lr(_progress):
    return 3e-4


def _box(n=OBS):
    import numpy as np
    from gymnasium import spaces

    return spaces.Box(low=-1.0, high=1.0, shape=(n,), dtype=np.float32)


def _obs(shape, n=OBS):
    return torch.rand(N[shape], n) * 2 - 1


def _ac(action_space, **kw):
    from stable_baselines3.common.policies import ActorCriticPolicy

    return ActorCriticPolicy(_box(), action_space, _lr, net_arch=dict(pi=[16, 16], vf=[16, 16]), **kw)


def _discrete():
    from gymnasium import spaces

    return spaces.Discrete(3)


def ppo_forward_discrete(shape=0):
    """PPO / A2C rollout step: actions, values, log-probs from a categorical head."""
    policy = _ac(_discrete())
    policy.set_training_mode(False)
    return policy.eval(), (_obs(shape),), {}


def ppo_forward_continuous_deterministic(shape=0):
    policy = _ac(_box(2))
    policy.set_training_mode(False)
    return policy.eval(), (_obs(shape),), {"deterministic": True}


def ppo_evaluate_actions_continuous(shape=0):
    """PPO's loss inputs: log-prob, entropy and values of minibatch actions (Gaussian head)."""
    policy = _ac(_box(2))
    policy.set_training_mode(True)
    actions = torch.rand(N[shape], 2) * 2 - 1
    return policy.evaluate_actions, (_obs(shape), actions), {}


def ppo_evaluate_actions_discrete(shape=0):
    policy = _ac(_discrete())
    policy.set_training_mode(True)
    actions = torch.randint(0, 3, (N[shape],))
    return policy.evaluate_actions, (_obs(shape), actions), {}


def ppo_evaluate_actions_multidiscrete(shape=0):
    from gymnasium import spaces

    policy = _ac(spaces.MultiDiscrete([3, 2, 4]))
    policy.set_training_mode(True)
    actions = torch.stack([torch.randint(0, k, (N[shape],)) for k in (3, 2, 4)], dim=1)
    return policy.evaluate_actions, (_obs(shape), actions), {}


def ppo_evaluate_actions_multibinary(shape=0):
    from gymnasium import spaces

    policy = _ac(spaces.MultiBinary(3))
    policy.set_training_mode(True)
    actions = torch.randint(0, 2, (N[shape], 3)).float()
    return policy.evaluate_actions, (_obs(shape), actions), {}


def ppo_gsde_forward(shape=0):
    """generalized State-Dependent Exploration (use_sde=True): noise matrices resampled by batch."""
    policy = _ac(_box(2), use_sde=True, log_std_init=-2.0)
    with torch.no_grad():  # as in collect_rollouts' forward under no_grad (a graph leaf: deep-copyable)
        policy.reset_noise(N[shape])
    policy.set_training_mode(False)
    return policy.eval(), (_obs(shape),), {}


def ppo_predict_values(shape=0):
    policy = _ac(_discrete())
    policy.set_training_mode(False)
    return policy.predict_values, (_obs(shape),), {}


def ppo_cnn_predict(shape=0):
    """Image observations (NatureCNN), `_predict` as `policy.predict` calls it after obs_to_tensor."""
    import numpy as np
    from gymnasium import spaces
    from stable_baselines3.common.policies import ActorCriticCnnPolicy

    obs_space = spaces.Box(low=0, high=255, shape=(3, 40, 40), dtype=np.uint8)
    policy = ActorCriticCnnPolicy(obs_space, _discrete(), _lr, features_extractor_kwargs=dict(features_dim=32))
    policy.set_training_mode(False)
    obs = torch.randint(0, 256, (N[shape], 3, 40, 40), dtype=torch.uint8).float()
    return policy._predict, (obs,), {"deterministic": True}


def ppo_multi_input_forward(shape=0):
    """Dict observations (CombinedExtractor: an image and a vector)."""
    import numpy as np
    from gymnasium import spaces
    from stable_baselines3.common.policies import MultiInputActorCriticPolicy

    obs_space = spaces.Dict({"img": spaces.Box(low=0, high=255, shape=(1, 36, 36), dtype=np.uint8),
                             "vec": _box(4)})
    policy = MultiInputActorCriticPolicy(obs_space, _discrete(), _lr, net_arch=[16])
    policy.set_training_mode(False)
    n = N[shape]
    obs = {"img": torch.randint(0, 256, (n, 1, 36, 36)).float(), "vec": torch.rand(n, 4)}
    return policy.eval(), (obs,), {}


def _sac():
    from stable_baselines3.sac.policies import SACPolicy

    return SACPolicy(_box(), _box(2), _lr, net_arch=[16, 16])


def sac_actor_action_log_prob(shape=0):
    """SAC's actor loss input: squashed Gaussian actions and their log-probs."""
    policy = _sac()
    policy.set_training_mode(True)
    return policy.actor.action_log_prob, (_obs(shape),), {}


def sac_predict(shape=0):
    policy = _sac()
    policy.set_training_mode(False)
    return policy._predict, (_obs(shape),), {"deterministic": True}


def sac_critic(shape=0):
    """Twin Q-networks on (obs, action), as SAC's critic loss calls them."""
    policy = _sac()
    policy.set_training_mode(True)
    return policy.critic.train(), (_obs(shape), torch.rand(N[shape], 2) * 2 - 1), {}


def sac_gsde_actor(shape=0):
    from stable_baselines3.sac.policies import SACPolicy

    policy = SACPolicy(_box(), _box(2), _lr, net_arch=[16, 16], use_sde=True)
    with torch.no_grad():
        policy.reset_noise(N[shape])
    policy.set_training_mode(False)
    return policy.actor.eval(), (_obs(shape),), {}


def td3_forward(shape=0):
    from stable_baselines3.td3.policies import TD3Policy

    policy = TD3Policy(_box(), _box(2), _lr, net_arch=[16, 16])
    policy.set_training_mode(False)
    return policy.eval(), (_obs(shape),), {}


def td3_critic_q1(shape=0):
    from stable_baselines3.td3.policies import TD3Policy

    policy = TD3Policy(_box(), _box(2), _lr, net_arch=[16, 16])
    policy.set_training_mode(True)
    return policy.critic.q1_forward, (_obs(shape), torch.rand(N[shape], 2) * 2 - 1), {}


def dqn_predict(shape=0):
    """DQN's greedy action (argmax over Q-values)."""
    from stable_baselines3.dqn.policies import DQNPolicy

    policy = DQNPolicy(_box(), _discrete(), _lr, net_arch=[16, 16])
    policy.set_training_mode(False)
    return policy._predict, (_obs(shape),), {"deterministic": True}


def dqn_q_net_train(shape=0):
    from stable_baselines3.dqn.policies import DQNPolicy

    policy = DQNPolicy(_box(), _discrete(), _lr, net_arch=[16, 16])
    policy.set_training_mode(True)
    return policy.q_net.train(), (_obs(shape),), {}


MODELS = {
    "sb3_ppo_forward_discrete": ("eval", ppo_forward_discrete),
    "sb3_ppo_forward_continuous_det": ("eval", ppo_forward_continuous_deterministic),
    "sb3_ppo_evaluate_actions_box": ("train", ppo_evaluate_actions_continuous),
    "sb3_ppo_evaluate_actions_discrete": ("train", ppo_evaluate_actions_discrete),
    "sb3_ppo_evaluate_actions_multidiscrete": ("train", ppo_evaluate_actions_multidiscrete),
    "sb3_ppo_evaluate_actions_multibinary": ("train", ppo_evaluate_actions_multibinary),
    "sb3_ppo_gsde_forward": ("eval", ppo_gsde_forward),
    "sb3_ppo_predict_values": ("eval", ppo_predict_values),
    "sb3_ppo_cnn_predict": ("eval", ppo_cnn_predict),
    "sb3_ppo_multi_input_forward": ("eval", ppo_multi_input_forward),
    "sb3_sac_actor_action_log_prob": ("train", sac_actor_action_log_prob),
    "sb3_sac_predict": ("eval", sac_predict),
    "sb3_sac_critic": ("train", sac_critic),
    "sb3_sac_gsde_actor": ("eval", sac_gsde_actor),
    "sb3_td3_forward": ("eval", td3_forward),
    "sb3_td3_critic_q1": ("train", td3_critic_q1),
    "sb3_dqn_predict": ("eval", dqn_predict),
    "sb3_dqn_q_net_train": ("train", dqn_q_net_train),
}
