extension ConsoleTemplates {
    static let iiideaPages: [String: String] = [
        "iiideas": """
        {{^iiideas}}<p>No iiideas yet. Obtain one from the <a href="/console/store">store</a>, or write one in a route file.</p>{{/iiideas}}
        <ul class="cards" aria-label="iiideas">
        {{#iiideas}}
        <li class="card" data-iiidea="{{id}}">
        <h2>{{display_title}}</h2>
        <p class="meta"><code>{{id}}</code> · {{#template}}from the store (template <code>{{template}}</code>){{/template}}{{^template}}in {{file}}{{/template}}{{#overridden}} · preferences changed here{{/overridden}}</p>
        <p class="chain"><span>{{trigger}}</span> <span aria-hidden="true">→</span><span class="sr">then</span> <span>{{service}}</span> <span aria-hidden="true">→</span><span class="sr">then</span> <span>{{action}}</span></p>
        <p class="state"><span class="badge {{state_class}}" data-state>{{state}}</span>{{#reason}} <span class="reason" data-reason>{{reason}}</span>{{/reason}}</p>
        <p class="runs-line">Last run: {{#last_run}}<time datetime="{{started_iso}}">{{started}}</time>, <span class="outcome {{outcome}}">{{outcome}}</span>{{#duration}}, {{duration}}{{/duration}}{{/last_run}}{{^last_run}}never{{/last_run}} · <span data-runs-hour>{{runs_last_hour}}</span> in the last hour</p>
        <div class="actions">
        <form method="post" action="/console/iiideas/{{id}}/{{toggle}}" class="inline">
        <input type="hidden" name="csrf" value="{{csrf}}">
        <button type="submit" aria-label="{{toggle_label}} {{id}}">{{toggle_label}}</button>
        </form>
        <a class="button" href="/console/iiideas/{{id}}" aria-label="Settings of {{id}}">Settings</a>
        <a class="button" href="/console/iiideas/{{id}}/runs" aria-label="Runs of {{id}}">Runs</a>
        {{#template}}
        <form method="post" action="/console/iiideas/{{id}}/delete" class="inline" data-confirm="Delete the iiidea {{id}}?">
        <input type="hidden" name="csrf" value="{{csrf}}">
        <button type="submit" class="danger" aria-label="Delete {{id}}">Delete</button>
        </form>
        {{/template}}
        </div>
        </li>
        {{/iiideas}}
        </ul>
        """,
        "iiidea": """
        <p class="chain"><span>{{trigger}}</span> → <span>{{service}}</span> → <span>{{action}}</span></p>
        <p class="state"><span class="badge {{state_class}}">{{state}}</span>{{#reason}} <span class="reason">{{reason}}</span>{{/reason}}</p>
        <p><a href="/console/iiideas/{{id}}/runs">Run history</a></p>
        <form method="post" action="/console/iiideas/{{id}}/preferences" class="card" novalidate>
        <h2>Settings</h2>
        {{#read_only}}<p class="help">This iiidea is written in {{file}}. What you save here overrides its preferences and is kept in the router's store.</p>{{/read_only}}
        <input type="hidden" name="csrf" value="{{csrf}}">
        {{#service_form}}{{> preferences}}{{/service_form}}
        {{#action_form}}{{> preferences}}{{/action_form}}
        <button type="submit">Save and apply</button>
        </form>
        {{#overridden}}
        <form method="post" action="/console/iiideas/{{id}}/preferences/reset" class="inline">
        <input type="hidden" name="csrf" value="{{csrf}}">
        <button type="submit">Back to the route file's preferences</button>
        </form>
        {{/overridden}}
        <form method="post" action="/console/iiideas/{{id}}/run" class="card">
        <h2>Run now</h2>
        <input type="hidden" name="csrf" value="{{csrf}}">
        <label for="run-input">Sample input (the trigger's output, JSON)</label>
        <textarea id="run-input" name="input" rows="4" aria-describedby="run-input-help">{{sample_input}}</textarea>
        <p class="help" id="run-input-help">A test run: the trigger's condition is skipped; the run is recorded with the others.</p>
        <button type="submit">Run now</button>
        </form>
        """,
        "template_form": """
        <p>{{description}}</p>
        <p class="chain"><span>{{trigger}}</span> → <span>{{service}}</span> → <span>{{action}}</span></p>
        <form method="post" action="/console/store/{{template_id}}" class="card" novalidate>
        <input type="hidden" name="csrf" value="{{csrf}}">
        <div class="field"><label for="f-id">Id</label>
        <input id="f-id" name="id" value="{{new_id}}" pattern="[A-Za-z0-9_-]+" required aria-describedby="f-id-help"{{#id_error}} aria-invalid="true"{{/id_error}}>
        <p class="help" id="f-id-help">Letters, digits, - and _.</p>
        {{#id_error}}<p class="field-error" role="alert">id: {{id_error}}</p>{{/id_error}}</div>
        <div class="field"><label for="f-title">Title</label><input id="f-title" name="title" value="{{new_title}}"></div>
        {{#service_form}}{{> preferences}}{{/service_form}}
        {{#action_form}}{{> preferences}}{{/action_form}}
        <button type="submit">Obtain</button>
        </form>
        """,
        "store": """
        <form method="get" action="/console/store" class="search" role="search">
        <label for="q">Search the templates</label>
        <input id="q" name="q" type="search" value="{{query}}">
        <button type="submit">Search</button>
        </form>
        {{^templates}}<p>No template matches{{#query}} “{{query}}”{{/query}}. Templates are declared in the route files under <code>iiidea_templates:</code>.</p>{{/templates}}
        <ul class="cards" aria-label="Templates">
        {{#templates}}
        <li class="card" data-template="{{id}}">
        <h2>{{display_title}}</h2>
        <p>{{description}}</p>
        <p class="chain"><span>{{trigger}}</span> → <span>{{service}}</span> → <span>{{action}}</span></p>
        {{#has_tags}}<p class="tags">{{#tags}}<span class="tag">{{.}}</span> {{/tags}}</p>{{/has_tags}}
        <a class="button" href="/console/store/{{id}}" aria-label="Obtain {{id}}">Obtain</a>
        </li>
        {{/templates}}
        </ul>
        """,
        "runs": """
        <form method="get" action="/console/iiideas/{{id}}/runs" class="search">
        <label for="outcome">Outcome</label>
        <select id="outcome" name="outcome">
        {{#outcomes}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{label}}</option>{{/outcomes}}
        </select>
        <button type="submit">Filter</button>
        </form>
        <p class="live-state" aria-live="polite" data-live-state>{{#live}}Live: new runs appear here.{{/live}}</p>
        <div class="table-wrap">
        <table class="runs">
        <caption class="sr">Runs of {{id}}, newest first</caption>
        <thead><tr><th scope="col">Started</th><th scope="col">Outcome</th><th scope="col">Duration</th><th scope="col">Input</th><th scope="col">Output or error</th></tr></thead>
        <tbody id="runs">
        {{#runs}}{{> run_row}}{{/runs}}
        </tbody>
        </table>
        </div>
        {{^runs}}<p data-no-runs>No runs{{#filtered}} with this outcome{{/filtered}}.</p>{{/runs}}
        <nav class="pages" aria-label="Pages">
        {{#newer}}<a href="{{newer}}">Newer</a>{{/newer}}
        {{#older}}<a href="{{older}}">Older</a>{{/older}}
        </nav>
        """,
        "run_row": """
        <tr data-run="{{run_id}}" class="{{outcome}}">
        <td data-label="Started"><time datetime="{{started_iso}}">{{started}}</time></td>
        <td data-label="Outcome"><span class="outcome {{outcome}}">{{outcome}}</span>{{#piece}} <span class="piece">at {{piece}}</span>{{/piece}}</td>
        <td data-label="Duration">{{duration}}</td>
        <td data-label="Input"><pre>{{input}}</pre></td>
        <td data-label="Output or error">{{#error}}<pre class="error">{{error}}</pre>{{/error}}{{^error}}<pre>{{output}}</pre>{{/error}}</td>
        </tr>
        """,
    ]
}
