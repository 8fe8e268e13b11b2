import HealthCardsCore

/// The whole link server without sockets: the services it runs and the one `Router` their routes make, assembled
/// from stores, settings, a clock and a log. The server program builds its front (`HTTPServer`) on `router`;
/// a test calls `respond` in its own process, as the front does, and moves its own clock (the model is
/// hummingbird's `app.test(.router)`).
///
/// - The links protocol (`LinkService`): `POST`/`GET <base>/<id>`, `GET <base>/file/<secret>`, `GET /healthz`.
/// - With `Options.issue`: `$health-cards-issue` and its discovery (`HealthCardsIssueService`) over `cards`.
public struct ServerApplication: Sendable {
    public struct Options: Sendable {
        /// The links protocol's settings (base URL, location lifetime, polling, request budget, …).
        public var links: LinkService.Configuration
        /// Threads of the passcode pool (`LinkService.init`).
        public var passcodeChecksAtOnce = 2
        /// Passcode requests that may wait for the pool (`LinkService.init`).
        public var passcodeQueueLimit = 64
        /// `$health-cards-issue`'s settings; nil: no FHIR routes.
        public var issue: HealthCardsIssueService.Configuration?

        public init(links: LinkService.Configuration, issue: HealthCardsIssueService.Configuration? = nil) {
            self.links = links
            self.issue = issue
        }
    }

    public let links: LinkService
    /// Nil without `Options.issue`.
    public let issue: HealthCardsIssueService?
    /// Every route the server answers, in the order it matches them.
    public let router: Router

    /// - Parameters:
    ///   - linkStore: where the links are.
    ///   - cardStore: where the cards `$health-cards-issue` serves are; needed with `options.issue` (nil then
    ///     gives no FHIR routes).
    ///   - clock: the time every request is judged at (links, locations, polling, budgets, access tokens).
    public init(
        options: Options, linkStore: LinkStore, cardStore: CardStore? = nil, clock: any WallClock, log: ServerLog,
        metrics: ServerMetrics? = nil
    ) {
        links = LinkService(
            configuration: options.links, store: linkStore, clock: clock, log: log,
            passcodeChecksAtOnce: options.passcodeChecksAtOnce, passcodeQueueLimit: options.passcodeQueueLimit,
            metrics: metrics)
        if let configuration = options.issue, let cardStore {
            issue = HealthCardsIssueService(configuration: configuration, store: cardStore, clock: clock, log: log)
        } else {
            issue = nil
        }
        router = Router(routes: links.routes + (issue?.routes ?? []))
    }

    /// The links and cards of one database (`DatabaseLinkStore`, `DatabaseCardStore`).
    public init(
        options: Options, database: Database, clock: any WallClock, log: ServerLog, metrics: ServerMetrics? = nil
    ) {
        self.init(
            options: options, linkStore: DatabaseLinkStore(database: database),
            cardStore: options.issue == nil ? nil : DatabaseCardStore(database: database), clock: clock, log: log,
            metrics: metrics)
    }

    /// Answers one request as the server does (404/405/preflight, 413 over a route's limit, the handler, the
    /// common headers), waiting for an answer a handler defers (a passcode check).
    public func respond(_ request: HTTPRequest) -> HTTPResponse { router.respond(request).response }

    /// Ends the passcode pool's threads once their queue is done.
    public func stop() { links.stop() }
}
