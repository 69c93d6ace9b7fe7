"""A Qeo peer on plain Cyclone DDS (Python `cyclonedds` from PyPI) for the Qeo tests.

    qeo_peer.py sub-chat SECONDS        print each ChatMessage as a JSON line, until SECONDS pass or
                                        stdin closes
    qeo_peer.py pub-chat FROM TEXT      write a ChatMessage every 100 ms until stdin closes
    qeo_peer.py pub-count FROM COUNT    write COUNT ChatMessages "1" to "COUNT" at once, print
                                        "written", then wait for stdin to close
    qeo_peer.py watch-participants      print each ChatParticipant state as a JSON line and
                                        {"disposed": true} for a disposal, until stdin closes
    qeo_peer.py participant NAME STATE  write a ChatParticipant state; then, for each line of stdin:
                                        "remove" disposes it, "writedispose STATE" writes STATE and
                                        disposes it in one sample, "unregister" unregisters it;
                                        exit (the writer leaves) when stdin closes

Domain QEO_DOMAIN (default 128, Qeo's) and Qeo's names: topic org/qeo/sample/simplechat/ChatMessage, type
org::qeo::sample::simplechat::ChatMessage; event QoS (reliable, volatile, keep-all).
"""
import json
import os
import sys
from dataclasses import dataclass
import threading
import time

from cyclonedds.core import Policy, Qos
from cyclonedds.domain import DomainParticipant
from cyclonedds.idl import IdlEnum, IdlStruct
import cyclonedds.idl.annotations as annotate
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


class ChatState(IdlEnum, typename="org::qeo::sample::simplechat::ChatState"):
    AVAILABLE = 0
    IDLE = 1
    BUSY = 2
    AWAY = 3


@dataclass
class ChatParticipant(IdlStruct, typename="org::qeo::sample::simplechat::ChatParticipant"):
    name: str
    annotate.key("name")
    state: ChatState


# Qeo's state QoS: reliable, transient-local, keep-last 1, exclusive ownership.
STATE_QOS = Qos(Policy.Reliability.Reliable(max_blocking_time=duration(seconds=1)), Policy.Durability.TransientLocal,
                Policy.History.KeepLast(1), Policy.Ownership.Exclusive)
EVENT_QOS = Qos(Policy.Reliability.Reliable(max_blocking_time=duration(seconds=1)), Policy.Durability.Volatile,
                Policy.History.KeepAll)


def main():
    participant = DomainParticipant(int(os.environ.get("QEO_DOMAIN", "128")))
    stdin_closed = threading.Event()
    if sys.argv[1] == "watch-participants":
        topic = Topic(participant, "org/qeo/sample/simplechat/ChatParticipant", ChatParticipant)
        reader = DataReader(participant, topic, qos=STATE_QOS)
        threading.Thread(target=lambda: (sys.stdin.read(), stdin_closed.set()), daemon=True).start()
        print("ready", flush=True)
        while not stdin_closed.is_set():
            for sample in reader.take(N=16):
                if isinstance(sample, ChatParticipant):
                    print(json.dumps({"name": sample.name, "state": sample.state.name}), flush=True)
                else:
                    print(json.dumps({"disposed": True}), flush=True)
            time.sleep(0.02)
        return
    if sys.argv[1] == "participant":
        topic = Topic(participant, "org/qeo/sample/simplechat/ChatParticipant", ChatParticipant)
        writer = DataWriter(participant, topic, qos=STATE_QOS)
        sample = ChatParticipant(name=sys.argv[2], state=ChatState[sys.argv[3]])
        writer.write(sample)
        print("ready", flush=True)
        for line in sys.stdin:
            words = line.split()
            if words == ["remove"]:
                writer.dispose(sample)
                print("removed", flush=True)
            elif len(words) == 2 and words[0] == "writedispose":
                writer.write_dispose(ChatParticipant(name=sys.argv[2], state=ChatState[words[1]]))
                print("removed", flush=True)
            elif words == ["unregister"]:
                writer.unregister_instance(sample)
                print("unregistered", flush=True)
        return
    topic = Topic(participant, "org/qeo/sample/simplechat/ChatMessage", ChatMessage)
    if sys.argv[1] == "sub-chat":
        reader = DataReader(participant, topic, qos=EVENT_QOS)
        deadline = time.time() + float(sys.argv[2])
        threading.Thread(target=lambda: (sys.stdin.read(), stdin_closed.set()), daemon=True).start()
        print("ready", flush=True)
        while time.time() < deadline and not stdin_closed.is_set():
            for sample in reader.take(N=16):
                if isinstance(sample, ChatMessage):
                    print(json.dumps({"from": getattr(sample, "from"), "message": sample.message}), flush=True)
            time.sleep(0.02)
    elif sys.argv[1] == "pub-count":
        writer = DataWriter(participant, topic, qos=EVENT_QOS)
        print("ready", flush=True)
        # Reliable and keep-all: a reader that does not keep up slows these writes down.
        for number in range(1, int(sys.argv[3]) + 1):
            writer.write(ChatMessage(**{"from": sys.argv[2], "message": str(number)}))
        print("written", flush=True)
        sys.stdin.read()
    elif sys.argv[1] == "pub-chat":
        writer = DataWriter(participant, topic, qos=EVENT_QOS)
        done = threading.Event()
        threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()
        print("ready", flush=True)
        while not done.is_set():
            writer.write(ChatMessage(**{"from": sys.argv[2], "message": sys.argv[3]}))
            time.sleep(0.1)


main()
