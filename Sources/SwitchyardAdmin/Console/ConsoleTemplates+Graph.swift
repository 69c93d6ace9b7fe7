extension ConsoleTemplates {
    static let graphPages: [String: String] = [
        "graph": """
        <p class="live-state" aria-live="polite" data-live-state></p>
        <h2>Instances</h2>
        <div class="table-wrap">
        <table class="instances">
        <caption class="sr">Plugin instances and their readiness</caption>
        <thead><tr><th scope="col">Instance</th><th scope="col">Plugin</th><th scope="col">Ready</th><th scope="col">Ports</th><th scope="col">Emitted</th><th scope="col">Acknowledged</th><th scope="col">Failed</th></tr></thead>
        <tbody>
        {{#instances}}
        <tr data-instance="{{name}}">
        <th scope="row" data-label="Instance">{{name}}</th>
        <td data-label="Plugin">{{plugin}}</td>
        <td data-label="Ready"><span class="badge {{ready_class}}" data-ready>{{ready_text}}</span>{{#reason}} <span class="reason">{{reason}}</span>{{/reason}}</td>
        <td data-label="Ports">{{#ports}}<span class="port {{direction}}" title="{{direction}}">{{name}}</span> {{/ports}}</td>
        <td data-label="Emitted" data-counter="emitted">{{emitted}}</td>
        <td data-label="Acknowledged" data-counter="acknowledged">{{acknowledged}}</td>
        <td data-label="Failed" data-counter="failed">{{failed}}</td>
        </tr>
        {{/instances}}
        </tbody>
        </table>
        </div>
        <h2>Routes</h2>
        <div class="table-wrap">
        <table class="routes">
        <caption class="sr">Routes and their counters</caption>
        <thead><tr><th scope="col">Route</th><th scope="col">From → to</th><th scope="col">Received</th><th scope="col">Filtered</th><th scope="col">Delivered</th><th scope="col">Failed</th><th scope="col">Dropped</th><th scope="col">Queue</th></tr></thead>
        <tbody>
        {{#routes}}
        <tr data-route="{{name}}">
        <th scope="row" data-label="Route">{{name}}{{#at_least_once}} <span class="tag">at-least-once</span>{{/at_least_once}}</th>
        <td data-label="From → to">{{from}} → {{to}}</td>
        <td data-label="Received" data-counter="received">{{received}}</td>
        <td data-label="Filtered" data-counter="filtered">{{filtered}}</td>
        <td data-label="Delivered" data-counter="delivered">{{delivered}}</td>
        <td data-label="Failed" data-counter="failed">{{failed}}</td>
        <td data-label="Dropped" data-counter="dropped">{{dropped}}</td>
        <td data-label="Queue" data-counter="queued">{{queued}}</td>
        </tr>
        {{/routes}}
        </tbody>
        </table>
        </div>
        <h2 id="dead-letters">Dead letters</h2>
        {{^has_spool}}<p>No route is at-least-once, so nothing is kept as a dead letter.</p>{{/has_spool}}
        {{#has_spool}}
        {{^dead_letters}}<p data-no-dead-letters>None.</p>{{/dead_letters}}
        {{#has_dead_letters}}
        <div class="table-wrap">
        <table class="dead-letters">
        <caption class="sr">Deliveries given up on</caption>
        <thead><tr><th scope="col">Id</th><th scope="col">Route → sink</th><th scope="col">Failed</th><th scope="col">Attempts</th><th scope="col">Error</th><th scope="col">Actions</th></tr></thead>
        <tbody>
        {{#dead_letters}}
        <tr data-dead-letter="{{id}}">
        <th scope="row" data-label="Id"><a href="/console/dead-letters/{{id}}" aria-label="Show dead letter {{id}}">{{id}}</a></th>
        <td data-label="Route → sink">{{route}} → {{sink}}</td>
        <td data-label="Failed"><time datetime="{{failed_at_iso}}">{{failed_at}}</time></td>
        <td data-label="Attempts">{{attempts}}</td>
        <td data-label="Error">{{error}}</td>
        <td data-label="Actions">{{> dead_letter_actions}}</td>
        </tr>
        {{/dead_letters}}
        </tbody>
        </table>
        </div>
        {{#more_dead_letters}}<p>Showing the newest {{shown}}; the admin API lists all.</p>{{/more_dead_letters}}
        {{/has_dead_letters}}
        {{/has_spool}}
        """,
        "dead_letter_actions": """
        <form method="post" action="/console/dead-letters/{{id}}/replay" class="inline">
        <input type="hidden" name="csrf" value="{{csrf}}">
        <button type="submit" aria-label="Replay dead letter {{id}}">Replay</button>
        </form>
        <form method="post" action="/console/dead-letters/{{id}}/drop" class="inline" data-confirm="Drop dead letter {{id}} for good?">
        <input type="hidden" name="csrf" value="{{csrf}}">
        <button type="submit" class="danger" aria-label="Drop dead letter {{id}}">Drop</button>
        </form>
        """,
        "dead_letter": """
        <dl class="facts">
        <dt>Route</dt><dd>{{route}}</dd>
        <dt>Sink</dt><dd>{{sink}}</dd>
        <dt>Envelope</dt><dd><code>{{envelope_id}}</code> ({{type}})</dd>
        <dt>Failed</dt><dd><time datetime="{{failed_at_iso}}">{{failed_at}}</time> after {{attempts}} attempts</dd>
        <dt>Error</dt><dd>{{error}}</dd>
        </dl>
        <h2>Envelope</h2>
        <pre class="envelope">{{envelope}}</pre>
        {{> dead_letter_actions}}
        <p><a href="/console/graph#dead-letters">All dead letters</a></p>
        """,
    ]
}
