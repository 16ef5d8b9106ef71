"""Pure codecs of RocketMQ 4.9.8's remoting frames and its stored-message binary format."""
