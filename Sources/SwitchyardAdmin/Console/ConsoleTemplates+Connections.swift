extension ConsoleTemplates {
    /// The connections page (``ConsoleConnectionPages``).
    static let connectionPages: [String: String] = [
        "connections": """
        <p class="help">OAuth 2.0 connections of the route files (<code>oauth:</code>). An <code>http</code> piece with <code>auth: { oauth: NAME }</code> calls with the connection's token; its iiidea waits until the connection is connected.</p>
        {{^connections}}<p>The route files declare no connection.</p>{{/connections}}
        {{#connections}}
        <section class="card" data-connection="{{name}}">
        <h2>{{name}}</h2>
        <p><span class="badge {{#connected}}on{{/connected}}{{^connected}}warn{{/connected}}" data-status>{{#connected}}connected{{/connected}}{{^connected}}not connected{{/connected}}</span>
        {{#expires_at}} <span class="reason">token until {{expires_at}}</span>{{/expires_at}}{{#scope}} <span class="reason">scope {{scope}}</span>{{/scope}}</p>
        {{#has_waiting}}<p class="reason">Waiting for it: {{waiting}}</p>{{/has_waiting}}
        {{#last_error}}<p class="problem">{{last_error}}</p>{{/last_error}}
        <form method="post" action="/console/connections/{{name}}/connect" class="inline">
        <input type="hidden" name="csrf" value="{{csrf}}">
        <button type="submit">{{#connected}}Connect again{{/connected}}{{^connected}}Connect{{/connected}}</button>
        </form>
        {{#connected}}
        <form method="post" action="/console/connections/{{name}}/disconnect" class="inline">
        <input type="hidden" name="csrf" value="{{csrf}}">
        <button type="submit" class="secondary">Disconnect</button>
        </form>
        {{/connected}}
        </section>
        {{/connections}}
        """
    ]
}
