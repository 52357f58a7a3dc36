"""The official A2A Python SDK (a2a-sdk, pinned) as a client of `tinyagent serve`'s A2A routes.

Reads TINYAGENT_A2A_URL (the agent's base URL), TINYAGENT_KEY and TINYAGENT_OTHER_KEY; prints
one line per check, and exits non-zero on the first that fails.
"""

import asyncio
import json
import os
import sys

import httpx
from a2a.client import ClientConfig, create_client
from a2a.helpers.proto_helpers import get_artifact_text, get_message_text, new_text_message
from a2a.types.a2a_pb2 import (
    GetTaskRequest,
    ListTasksRequest,
    Role,
    SendMessageRequest,
    TaskState,
)
from a2a.client import ClientFactory
from a2a.types.a2a_pb2 import AgentCard
from google.protobuf.json_format import MessageToDict, ParseDict

URL = os.environ["TINYAGENT_A2A_URL"]
KEY = os.environ["TINYAGENT_KEY"]
OTHER = os.environ["TINYAGENT_OTHER_KEY"]


def check(ok, what):
    if not ok:
        print(f"FAILED: {what}", flush=True)
        sys.exit(1)


def http(key):
    return httpx.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30)


async def main():
    # The card needs a key, as the agent list does.
    async with httpx.AsyncClient(timeout=30) as anonymous:
        response = await anonymous.get(f"{URL}/.well-known/agent-card.json")
        check(response.status_code == 401, f"a card without a key: {response.status_code}")
    print("card without key: 401")

    async with http(KEY) as alice, http(OTHER) as bob:
        # Not streamed: the SDK's send_message gives the finished task.
        client = await create_client(URL, client_config=ClientConfig(httpx_client=alice, streaming=False))
        request = SendMessageRequest(message=new_text_message("7 + 8?", role=Role.ROLE_USER))
        events = [event async for event in client.send_message(request)]
        check(len(events) == 1 and events[0].HasField("task"), f"one task: {events}")
        task = events[0].task
        check(task.status.state == TaskState.TASK_STATE_COMPLETED, f"completed: {task.status}")
        answer = get_artifact_text(task.artifacts[0])
        check(answer == "7 + 8 = 15", f"the answer artifact: {answer!r}")
        print(f"sent: {answer}")

        # Streamed: the tool call comes as a working update with the event as data.
        client = await create_client(URL, client_config=ClientConfig(httpx_client=alice, streaming=True))
        request = SendMessageRequest(
            message=new_text_message("and again?", role=Role.ROLE_USER, context_id=task.context_id)
        )
        kinds, tool_events, chunks, final = [], [], [], None
        async for event in client.send_message(request):
            kind = event.WhichOneof("payload")
            kinds.append(kind)
            if kind == "status_update":
                update = event.status_update
                for part in update.status.message.parts:
                    if part.HasField("data"):
                        tool_events.append(MessageToDict(part.data)["type"])
                if update.status.state == TaskState.TASK_STATE_COMPLETED:
                    final = get_message_text(update.status.message)
            elif kind == "artifact_update":
                chunks.append(get_artifact_text(event.artifact_update.artifact))
        check(tool_events == ["tool_call_started", "tool_call_finished"], f"tool events: {tool_events}")
        check(final == "7 + 8 = 15", f"the final message: {final!r}; {kinds}")
        check(chunks[-1] == "7 + 8 = 15", f"the last chunk: {chunks}")
        print(f"streamed: {final} after {' '.join(tool_events)}")

        # The key's tasks: both, in one context; another key sees none of them.
        tasks = await client.list_tasks(ListTasksRequest())
        check(len(tasks.tasks) == 2, f"two tasks: {len(tasks.tasks)}")
        check(len({t.context_id for t in tasks.tasks}) == 1, "one context")
        got = await client.get_task(GetTaskRequest(id=task.id))
        check(got.id == task.id, "get_task")
        print(f"listed: {len(tasks.tasks)} tasks in one context")

        # A 0.3 client (the SDK's compat transport, chosen by a card that offers only the 0.3
        # interface) on the same endpoint: message/send and message/stream.
        response = await alice.get(f"{URL}/.well-known/agent-card.json")
        card_json = response.json()
        check(card_json["protocolVersion"] == "0.3.0" and card_json["url"] == URL, f"0.3 fields: {card_json}")
        card = ParseDict(card_json, AgentCard(), ignore_unknown_fields=True)
        legacy = [i for i in card.supported_interfaces if i.protocol_version == "0.3"]
        check(len(legacy) == 1, f"a 0.3 interface: {card.supported_interfaces}")
        del card.supported_interfaces[:]
        card.supported_interfaces.extend(legacy)
        for streaming in (False, True):
            old = ClientFactory(ClientConfig(httpx_client=alice, streaming=streaming)).create(card)
            check("Compat" in type(old._transport).__name__, f"the compat transport: {type(old._transport)}")
            request = SendMessageRequest(message=new_text_message("0.3?", role=Role.ROLE_USER))
            final = None
            async for event in old.send_message(request):
                if event.HasField("task"):
                    final = event.task
                elif event.HasField("status_update") and event.status_update.status.state == TaskState.TASK_STATE_COMPLETED:
                    final = get_message_text(event.status_update.status.message)
            if not streaming:
                check(final.status.state == TaskState.TASK_STATE_COMPLETED, f"0.3 send: {final}")
                final = get_artifact_text(final.artifacts[0])
            check(final == "7 + 8 = 15", f"0.3 answer ({streaming=}): {final!r}")
            print(f"0.3 {'message/stream' if streaming else 'message/send'}: {final}")

        other = await create_client(URL, client_config=ClientConfig(httpx_client=bob, streaming=False))
        theirs = await other.list_tasks(ListTasksRequest())
        check(len(theirs.tasks) == 0, f"bob sees none: {len(theirs.tasks)}")
        try:
            await other.get_task(GetTaskRequest(id=task.id))
            check(False, "bob read alice's task")
        except Exception as err:  # the SDK's TaskNotFoundError
            print(f"other key: {type(err).__name__}")


asyncio.run(main())
