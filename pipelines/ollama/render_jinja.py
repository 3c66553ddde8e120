"""Renders chat templates with Jinja2 as transformers' apply_chat_template does
(trim_blocks, lstrip_blocks, the loopcontrols extension, raise_exception), for
ollama_test.go. Reads a JSON list of {template, bos_token, eos_token, messages,
add_generation_prompt} on stdin; writes a JSON list of {output} or {error}."""
import json
import sys

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment


class TemplateRaised(Exception):
    pass


def raise_exception(message):
    raise TemplateRaised(message)


env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                    extensions=["jinja2.ext.loopcontrols"])
env.globals["raise_exception"] = raise_exception
out = []
for case in json.load(sys.stdin):
    try:
        t = env.from_string(case["template"])
        out.append({"output": t.render(messages=case["messages"], bos_token=case["bos_token"],
                                       eos_token=case["eos_token"],
                                       add_generation_prompt=case["add_generation_prompt"])})
    except TemplateRaised as e:
        out.append({"error": str(e)})
json.dump(out, sys.stdout)
print("jinja2", jinja2.__version__, file=sys.stderr)
