"""Values every part of the model shares: messages and their properties, the configuration and version profiles,
delay levels, errors, the requests a client sends the broker and the broker's answers (wire.py), and the persistent
structures and record helpers the state is built from. Imports nothing from the rest of the model."""
