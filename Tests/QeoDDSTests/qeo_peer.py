"""A Qeo peer on plain Cyclone DDS (Python `cyclonedds` from PyPI) for the Qeo tests.

    qeo_peer.py sub-chat SECONDS        print each ChatMessage as a JSON line, until SECONDS pass
    qeo_peer.py pub-chat FROM TEXT      write a ChatMessage every 100 ms until stdin closes

Domain 128 and Qeo's names: topic org/qeo/sample/simplechat/ChatMessage, type
org::qeo::sample::simplechat::ChatMessage; event QoS (reliable, volatile, keep-all).
"""
import json
import sys
import threading
import time

from cyclonedds.core import Policy, Qos
from cyclonedds.domain import DomainParticipant
from cyclonedds.idl import IdlStruct
from cyclonedds.pub import DataWriter
from cyclonedds.sub import DataReader
from cyclonedds.topic import Topic
from cyclonedds.util import duration


class ChatMessage(IdlStruct, typename="org::qeo::sample::simplechat::ChatMessage"):
    # `from` is a Python keyword: declared through __annotations__ so the member keeps its name.
    __annotations__ = {"from": str, "message": str}

    def __init__(self, **fields):
        for name, value in fields.items():
            setattr(self, name, value)


EVENT_QOS = Qos(Policy.Reliability.Reliable(max_blocking_time=duration(seconds=1)), Policy.Durability.Volatile,
                Policy.History.KeepAll)


def main():
    participant = DomainParticipant(128)
    topic = Topic(participant, "org/qeo/sample/simplechat/ChatMessage", ChatMessage)
    if sys.argv[1] == "sub-chat":
        reader = DataReader(participant, topic, qos=EVENT_QOS)
        deadline = time.time() + float(sys.argv[2])
        print("ready", flush=True)
        while time.time() < deadline:
            for sample in reader.take(N=16):
                if isinstance(sample, ChatMessage):
                    print(json.dumps({"from": getattr(sample, "from"), "message": sample.message}), flush=True)
            time.sleep(0.02)
    elif sys.argv[1] == "pub-chat":
        writer = DataWriter(participant, topic, qos=EVENT_QOS)
        done = threading.Event()
        threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()
        print("ready", flush=True)
        while not done.is_set():
            writer.write(ChatMessage(**{"from": sys.argv[2], "message": sys.argv[3]}))
            time.sleep(0.1)


main()
