"""Shipped network weights (package data): ``q_snake/`` holds the AlphaSnake Zero snake of `jaxgames.agents.q_snake`."""
