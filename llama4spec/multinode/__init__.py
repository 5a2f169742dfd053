"""Multi-node serving: vLLM's own mode (one leader, headless followers) started from the config.

``plan`` decides every node's command and environment (pure); ``checks`` looks at the hosts
before anything starts; ``nodes`` owns the processes; ``lifeline`` and ``follower`` run on
the follower hosts.
"""
