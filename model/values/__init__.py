"""Values every part of the model shares: messages and their properties, the configuration and version profiles,
delay levels, errors, and the persistent structures and record helpers the state is built from. Imports nothing
from the rest of the model."""
